/**
 * Headless Chromium for the browser tests: Debian's /usr/bin/chromium (apt-get install chromium) driven by
 * playwright-core, which ships no browser of its own. CHROMIUM_PATH overrides the binary.
 */
import { existsSync } from 'node:fs';

import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function chromiumInstalled(): boolean {
	return existsSync(CHROMIUM_PATH);
}

export async function launchChromium(): Promise<Browser> {
	if (!chromiumInstalled()) {
		throw new Error(
			`No Chromium at ${CHROMIUM_PATH}: run "apt-get install -y chromium" (or set CHROMIUM_PATH)`,
		);
	}
	// --no-sandbox: CI runs as root, where Chromium's own sandbox refuses to start.
	return await chromium.launch({
		executablePath: CHROMIUM_PATH,
		headless: true,
		args: ['--no-sandbox'],
	});
}
