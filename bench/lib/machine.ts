/** The machine a benchmark ran on, printed with its table. */
import { spawnSync } from 'node:child_process';
import { cpus, loadavg, release, totalmem } from 'node:os';

import { REPO_ROOT } from '../../test/real-n8n/n8n';

export interface Machine {
	date: string;
	cpu: string;
	cores: number;
	memory_gib: number;
	kernel: string;
	bench_node: string;
	n8n_node?: string;
	n8n_version?: string;
	git_commit: string;
	/** Files of the package (nodes/, credentials/) that differ from the commit when the bench built it. */
	git_dirty: string[];
	load_average_start: number[];
	load_average_end?: number[];
}

export function describeMachine(): Machine {
	const git = (...args: string[]) =>
		spawnSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).stdout.trim();
	return {
		date: new Date().toISOString(),
		cpu: cpus()[0]?.model ?? 'unknown',
		cores: cpus().length,
		memory_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
		kernel: release(),
		bench_node: process.version,
		git_commit: git('rev-parse', '--short', 'HEAD'),
		git_dirty: git('status', '--porcelain', '--', 'nodes', 'credentials', 'package.json')
			.split('\n')
			.filter(Boolean),
		load_average_start: loadavg().map((v) => Math.round(v * 100) / 100),
	};
}

export function machineLines(m: Machine): string[] {
	return [
		`Machine: ${m.cores} cores (${m.cpu}), ${m.memory_gib} GiB, Linux ${m.kernel}; load average ${m.load_average_start.join(' ')} at start${m.load_average_end ? `, ${m.load_average_end.join(' ')} at end` : ''}`,
		`Node ${m.bench_node} (bench, sandbox, load client)${m.n8n_node ? `; n8n ${m.n8n_version} on Node ${m.n8n_node}` : ''}`,
		`Commit ${m.git_commit}${m.git_dirty.length ? ` with uncommitted changes to ${m.git_dirty.map((l) => l.slice(3)).join(', ')}` : ''}; ${m.date}`,
	];
}
