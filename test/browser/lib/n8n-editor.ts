/**
 * The n8n editor as a user drives it, for the browser checks of the real-n8n run (test/e2e/checks/editor.ts):
 * sign in as the e2e owner, open a workflow, open a node, pick options in its parameters, run a step,
 * read what the editor shows (toasts, node output, the credential modal). Works on both lines
 * (2.41.1 and 1.123.81); where their screens differ the helper says so.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

import type { Browser, Locator, Page } from 'playwright-core';

export interface Owner {
	email: string;
	password: string;
}

/** Where a phrase sits in a toast: pixels from the top of the toast's text, and whether it shows without scrolling. */
export interface ToastReading {
	text: string;
	/** Milliseconds from the click to the toast appearing. */
	ms: number;
	/** Offset of the end of each phrase from the top of the toast's text box, px. */
	phraseBottoms: Record<string, number>;
	/** Height of the toast's text box that shows without scrolling, px. */
	visibleHeight: number;
}

export class N8nEditor {
	private constructor(
		readonly page: Page,
		readonly baseUrl: string,
		readonly line: 1 | 2,
	) {}

	/** A new page signed in as `owner` through the sign-in form. */
	static async signIn(
		browser: Browser,
		baseUrl: string,
		line: 1 | 2,
		owner: Owner,
		timeoutMs = 90_000,
	): Promise<N8nEditor> {
		const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
		page.setDefaultTimeout(timeoutMs);
		const editor = new N8nEditor(page, baseUrl, line);
		await page.goto(`${baseUrl}/signin`);
		await page.fill('input[name=emailOrLdapLoginId]', owner.email);
		await page.fill('input[name=password]', owner.password);
		await page.click('[data-test-id=form-submit-button]');
		await page.waitForURL((url) => !url.pathname.includes('/signin'));
		return editor;
	}

	async close(): Promise<void> {
		await this.page.close();
	}

	async openWorkflow(id: string): Promise<void> {
		await this.page.goto(`${this.baseUrl}/workflow/${id}`);
		await this.page.locator('[data-test-id=canvas-node]').first().waitFor();
	}

	node(name: string): Locator {
		return this.page.locator(`[data-test-id=canvas-node][data-node-name="${name}"]`);
	}

	/** Double-clicks the node on the canvas: its panel (NDV) opens. */
	async openNode(name: string): Promise<Locator> {
		await this.node(name).dblclick();
		const ndv = this.page.locator('[data-test-id=ndv]');
		await ndv.waitFor();
		return ndv;
	}

	async closeNode(): Promise<void> {
		await this.page.keyboard.press('Escape');
		await this.page.locator('[data-test-id=ndv]').waitFor({ state: 'hidden' });
	}

	parameter(name: string): Locator {
		return this.page.locator(`[data-test-id=ndv] [data-test-id=parameter-input-${name}]`);
	}

	/** The items of the dropdown that is open now. */
	private openItems(): Locator {
		return this.page
			.locator('[data-test-id=parameter-input-item], [data-test-id=credential-select-option]')
			.filter({ visible: true });
	}

	/** Opens the dropdown of an options parameter (typing `filter` into its search) and returns its options' texts. */
	async openOptions(name: string, filter?: string): Promise<string[]> {
		await this.parameter(name).locator('input').first().click();
		if (filter !== undefined) await this.page.keyboard.type(filter);
		await this.openItems().first().waitFor();
		if (filter !== undefined) await this.page.waitForTimeout(500); // the list filters as one types
		return await this.openItems().evaluateAll((elements) =>
			elements.map((element) => (element.textContent ?? '').replace(/\s+/g, ' ').trim()),
		);
	}

	/** Picks the option whose text contains `option` in an options parameter. */
	async choose(name: string, option: string, filter?: string): Promise<void> {
		await this.openOptions(name, filter);
		await this.openItems().filter({ hasText: option }).first().click();
		await this.openItems()
			.first()
			.waitFor({ state: 'hidden' })
			.catch(() => undefined);
	}

	/** Picks a saved credential by name in the open node panel's credential field. */
	async chooseCredential(name: string): Promise<void> {
		await this.page
			.locator('[data-test-id=ndv] [data-test-id=node-credentials-select] input')
			.first()
			.click();
		await this.page
			.locator('.el-select-dropdown__item')
			.filter({ visible: true, hasText: name })
			.first()
			.click();
	}

	/** Publish (2.x: the Publish button, then Publish in its dialog) or activate (1.x: the Active switch) the open workflow. */
	async publish(): Promise<void> {
		if (this.line === 2) {
			await this.page.click('[data-test-id=workflow-open-publish-modal-button]');
			await this.page.click('[data-test-id=workflow-publish-button]');
		} else {
			await this.page.click('[data-test-id=workflow-activate-switch]');
		}
	}

	/**
	 * Opens a saved credential's modal, types `value` into the field labelled `field`, clicks Save (which
	 * runs the credential's Test), opens More details and returns the visible text containing `phrase`.
	 */
	async saveCredentialField(
		credentialId: string,
		field: string,
		value: string,
		phrase: string,
	): Promise<string> {
		await this.page.goto(`${this.baseUrl}/home/credentials/${credentialId}`);
		const modal = this.page.locator('[data-test-id=editCredential-modal]');
		await modal.waitFor();
		const input = modal
			.locator('[data-test-id=credential-connection-parameter]')
			.filter({ hasText: field })
			.locator('input')
			.first();
		await input.fill(value);
		await modal.locator('[data-test-id=credential-save-button]').click();
		// "Couldn't connect with these settings  More details": the test's message is behind the link.
		const details = modal
			.getByText('More details', { exact: true })
			.filter({ visible: true })
			.first();
		await details.click();
		const message = modal.getByText(phrase, { exact: false }).filter({ visible: true }).first();
		await message.waitFor();
		return ((await message.textContent()) ?? '').replace(/\s+/g, ' ').trim();
	}

	/** The Execute step button of the open node panel. */
	async executeStep(): Promise<void> {
		await this.page
			.locator('[data-test-id=ndv] [data-test-id=node-execute-button]')
			.first()
			.click();
	}

	/**
	 * Waits for a toast after `action` and reads it as a user sees it: its text, how long it took,
	 * and where each phrase ends, from the top of its text box, against the height it shows unscrolled.
	 */
	async toastAfter(
		action: () => Promise<void>,
		phrases: string[],
		timeoutMs = 60_000,
	): Promise<ToastReading> {
		const toasts = this.page.locator('.el-notification:visible');
		const before = await toasts.count();
		const started = Date.now();
		await action();
		const toast = toasts.nth(before);
		await toast.waitFor({ timeout: timeoutMs });
		const ms = Date.now() - started;
		// Runs in the page (no DOM types in this project's compilation: `any` below).
		const reading = await toast.evaluate((element: any, wanted: string[]) => {
			const doc = (globalThis as any).document;
			const box = element.querySelector('.el-notification__content') ?? element;
			const top = box.getBoundingClientRect().top;
			const phraseBottoms: Record<string, number> = {};
			const walker = doc.createTreeWalker(box, 4 /* NodeFilter.SHOW_TEXT */);
			const nodes: Array<{ data: string }> = [];
			for (let node = walker.nextNode(); node; node = walker.nextNode()) nodes.push(node);
			const full = nodes.map((n) => n.data).join('');
			for (const phrase of wanted) {
				const at = full.indexOf(phrase);
				if (at < 0) continue;
				// The text node holding the phrase's last character.
				let offset = at + phrase.length - 1;
				for (const node of nodes) {
					if (offset < node.data.length) {
						const range = doc.createRange();
						range.setStart(node, offset);
						range.setEnd(node, offset + 1);
						phraseBottoms[phrase] = Math.round(range.getBoundingClientRect().bottom - top);
						break;
					}
					offset -= node.data.length;
				}
			}
			return {
				text: String(element.textContent ?? '')
					.replace(/\s+/g, ' ')
					.trim(),
				phraseBottoms,
				visibleHeight: Math.round(box.clientHeight as number),
			};
		}, phrases);
		return { ...reading, ms };
	}

	async screenshot(path: string, target?: Locator): Promise<void> {
		mkdirSync(dirname(path), { recursive: true });
		if (target) await target.screenshot({ path });
		else await this.page.screenshot({ path });
	}
}
