import { newFaultId } from './ids';
import type { FaultSpec, FaultView } from './types';

/** Faults waiting for the next /v1 requests, first registered first used. */
export class FaultQueue {
	private pending: FaultView[] = [];

	add(spec: FaultSpec): FaultView {
		const fault: FaultView = { ...spec, id: newFaultId(), remaining: spec.count };
		this.pending.push(fault);
		return { ...fault };
	}

	/** Consumes one use of the first fault that applies to this path, if any. */
	take(path: string): FaultView | undefined {
		const fault = this.pending.find((f) => !f.path_prefix || path.startsWith(f.path_prefix));
		if (!fault) return undefined;
		fault.remaining -= 1;
		if (fault.remaining <= 0) this.pending = this.pending.filter((f) => f !== fault);
		return { ...fault };
	}

	list(): FaultView[] {
		return this.pending.map((f) => ({ ...f }));
	}

	clear(): void {
		this.pending = [];
	}
}
