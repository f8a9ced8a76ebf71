// Every documentation link the nodes and the credential carry (codex files, documentationUrl, any
// README link in their source) must land on a heading of README.md. GitHub turns a heading into
// an anchor: its text without markdown, lower-cased, punctuation dropped (letters, digits, "_",
// "-" and spaces kept), spaces turned into "-", and "-1", "-2", ... added to repeats.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const REPOSITORY = 'https://github.com/n8n-nodes-business-messaging/n8n-nodes-business-messaging';

export function githubSlugs(markdown: string): string[] {
	const seen = new Map<string, number>();
	const slugs: string[] = [];
	let fenced = false;
	for (const line of markdown.split('\n')) {
		if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
		const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
		if (!heading) continue;
		const text = heading[1]
			.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
			.replace(/<[^>]+>/g, '') // inline HTML
			.replace(/[`*~]/g, ''); // code spans, emphasis
		const base = text
			.toLowerCase()
			.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
			.replace(/ /g, '-');
		const count = seen.get(base) ?? 0;
		seen.set(base, count + 1);
		slugs.push(count === 0 ? base : `${base}-${count}`);
	}
	return slugs;
}

function files(dir: string, pattern: RegExp): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		return statSync(path).isDirectory() ? files(path, pattern) : pattern.test(name) ? [path] : [];
	});
}

/** Every README link (repository URL with an anchor) in the shipped sources. */
function documentationLinks(): Array<{ file: string; anchor: string }> {
	const sources = [...files(join(ROOT, 'nodes'), /\.(ts|json)$/), ...files(join(ROOT, 'credentials'), /\.ts$/)];
	const pattern = new RegExp(`${REPOSITORY.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(?:/blob/[^#"'\\s]+/README\\.md)?#([^"'\`\\s)]+)`, 'g');
	return sources.flatMap((file) =>
		[...readFileSync(file, 'utf8').matchAll(pattern)].map((m) => ({ file: relative(ROOT, file), anchor: m[1] })),
	);
}

describe('documentation links', () => {
	it('GitHub slug rules (as github.com renders them)', () => {
		expect(githubSlugs('# A b\n## Errors and what to do\n### Business Messaging (action node)\n## `npm run dev`: first run\n## A b')).toEqual([
			'a-b',
			'errors-and-what-to-do',
			'business-messaging-action-node',
			'npm-run-dev-first-run',
			'a-b-1',
		]);
		expect(githubSlugs('```sh\n# not a heading\n```\n## n8n\'s CLI (`@n8n/node-cli`)')).toEqual(['n8ns-cli-n8nnode-cli']);
	});

	it("every codex, documentationUrl and README link in the nodes and the credential lands on a README heading", () => {
		const slugs = new Set(githubSlugs(readFileSync(join(ROOT, 'README.md'), 'utf8')));
		const links = documentationLinks();
		// The codex of each node (the Docs button; the tool variant takes the action node's) and the credential's page.
		for (const file of [
			'nodes/BusinessMessaging/BusinessMessaging.node.json',
			'nodes/BusinessMessagingTrigger/BusinessMessagingTrigger.node.json',
			'nodes/BusinessMessagingPollingTrigger/BusinessMessagingPollingTrigger.node.json',
			'credentials/BusinessMessagingApi.credentials.ts',
		]) {
			expect(links.some((link) => link.file === file)).toBe(true);
		}
		const broken = links.filter((link) => !slugs.has(link.anchor)).map((link) => `${link.file}: #${link.anchor}`);
		expect(broken).toEqual([]);
	});
});
