// The n8n-core services that node helpers fetch from the DI container, set up once per
// test file (each jest test file has its own module registry, so its own environment).
//
// Real n8n builds these at start-up from its config (env vars, ~/.n8n/config). The harness
// points N8N_USER_FOLDER at a temp dir while the config objects are created, so nothing is
// written to the developer's home, and removes that dir when the test file ends. n8n's
// logger is silent unless N8N_LOG_LEVEL is set.
import 'reflect-metadata';

import { Container } from '@n8n/di';
import { BinaryDataConfig, BinaryDataService, ErrorReporter, InstanceSettings } from 'n8n-core';
import { Logger } from '@n8n/backend-common';
import type { IBinaryData, INodeExecutionData } from 'n8n-workflow';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';

export type HarnessBinaryDataMode = 'default' | 'filesystem';

type FileLocation = Parameters<BinaryDataService['store']>[0];

/** Workflow ids whose runs keep binary data in memory ('default' mode). */
const inMemoryWorkflowIds = new Set<string>();

function keepsInMemory(location: FileLocation): boolean {
	return location.type === 'execution' && inMemoryWorkflowIds.has(location.workflowId);
}

/**
 * n8n-core's real BinaryDataService in 'filesystem' mode, except that runs registered as
 * 'default' store through a second, real BinaryDataService in 'default' (in-memory) mode.
 *
 * Real n8n has one BinaryDataService whose mode is fixed for the whole instance by
 * N8N_DEFAULT_BINARY_DATA_MODE (in n8n 2.x the default is 'filesystem'). The harness lets
 * each run choose, keyed by the run's workflow id, so runs of both modes can overlap.
 * Reading back works for both: in-memory data carries its bytes (base64 in `data`), stored
 * data carries an id ('filesystem-v2:workflows/<id>/executions/temp/binary_data/<uuid>').
 */
class PerRunModeBinaryDataService extends BinaryDataService {
	constructor(
		fsConfig: BinaryDataConfig,
		private readonly inMemory: BinaryDataService,
		errorReporter: ErrorReporter,
		logger: Logger,
	) {
		super(fsConfig, errorReporter, logger);
	}

	override async store(
		location: FileLocation,
		bufferOrStream: Buffer | Readable,
		binaryData: IBinaryData,
	) {
		if (keepsInMemory(location))
			return await this.inMemory.store(location, bufferOrStream, binaryData);
		return await super.store(location, bufferOrStream, binaryData);
	}

	override async copyBinaryFile(location: FileLocation, binaryData: IBinaryData, filePath: string) {
		if (keepsInMemory(location))
			return await this.inMemory.copyBinaryFile(location, binaryData, filePath);
		return await super.copyBinaryFile(location, binaryData, filePath);
	}

	override async duplicateBinaryData(
		location: FileLocation,
		inputData: Array<INodeExecutionData[] | null>,
	) {
		if (keepsInMemory(location))
			return await this.inMemory.duplicateBinaryData(location, inputData);
		return await super.duplicateBinaryData(location, inputData);
	}
}

interface Environment {
	binaryDataService: BinaryDataService;
	/** Where 'filesystem' mode writes: <temp>/.n8n/storage */
	binaryDataDir: string;
}

let rootDir: string | undefined;
let environment: Promise<Environment> | undefined;

function cleanUp() {
	if (rootDir) rmSync(rootDir, { recursive: true, force: true });
	rootDir = undefined;
	environment = undefined;
}

// The harness is normally imported at the top of a test file, where jest allows hooks;
// elsewhere (imported inside a test, or by a ts-node script) the process exit removes the dir.
function registerCleanUp() {
	try {
		if (typeof afterAll === 'function') {
			afterAll(cleanUp);
			return;
		}
	} catch {
		// jest refuses hooks defined inside a test
	}
	process.once('exit', cleanUp);
}
registerCleanUp();

async function createEnvironment(): Promise<Environment> {
	rootDir = mkdtempSync(path.join(tmpdir(), 'n8n-harness-'));
	const previousUserFolder = process.env.N8N_USER_FOLDER;
	const previousLogLevel = process.env.N8N_LOG_LEVEL;
	process.env.N8N_USER_FOLDER = rootDir;
	// n8n logs node errors through its ErrorReporter at level 'error'. Quiet in tests unless
	// N8N_LOG_LEVEL is set (e.g. N8N_LOG_LEVEL=debug npx jest ... to see n8n's own logs).
	process.env.N8N_LOG_LEVEL = previousLogLevel ?? 'silent';
	try {
		// InstanceSettings reads N8N_USER_FOLDER when first created and writes <folder>/.n8n/config
		// with a fresh encryption key, as a new n8n install does.
		Container.get(InstanceSettings);
		const fsConfig = Container.get(BinaryDataConfig);
		fsConfig.mode = 'filesystem';
		const memoryConfig: BinaryDataConfig = Object.assign(
			Object.create(Object.getPrototypeOf(fsConfig) as object) as BinaryDataConfig,
			fsConfig,
			{ mode: 'default' as const },
		);
		const errorReporter = Container.get(ErrorReporter);
		const logger = Container.get(Logger);
		const inMemory = new BinaryDataService(memoryConfig, errorReporter, logger);
		await inMemory.init();
		const service = new PerRunModeBinaryDataService(fsConfig, inMemory, errorReporter, logger);
		await service.init();
		Container.set(BinaryDataService, service);
		return { binaryDataService: service, binaryDataDir: fsConfig.localStoragePath };
	} finally {
		if (previousUserFolder === undefined) delete process.env.N8N_USER_FOLDER;
		else process.env.N8N_USER_FOLDER = previousUserFolder;
		if (previousLogLevel === undefined) delete process.env.N8N_LOG_LEVEL;
	}
}

export async function harnessEnvironment(): Promise<Environment> {
	environment ??= createEnvironment();
	return await environment;
}

let workflowCounter = 0;

/** A fresh workflow id for one run or one webhook harness, with its binary data mode. */
export function newWorkflowId(binaryDataMode: HarnessBinaryDataMode = 'default'): string {
	workflowCounter += 1;
	const id = `harness${process.pid}x${workflowCounter}`;
	if (binaryDataMode === 'default') inMemoryWorkflowIds.add(id);
	else if (binaryDataMode !== 'filesystem')
		throw new Error(
			`Unknown binaryDataMode "${String(binaryDataMode)}": use 'default' or 'filesystem'`,
		);
	return id;
}

/** Reads binary data back through n8n's BinaryDataService, as nodes' getBinaryDataBuffer does. */
export async function readBinary(binaryData: IBinaryData): Promise<Buffer> {
	const { binaryDataService } = await harnessEnvironment();
	return await binaryDataService.getAsBuffer(binaryData);
}
