/** Aborts in-flight node work at shutdown; the work re-runs after the next start (at-least-once). */
export class ShutdownSignal extends Error {}

/**
 * One piece of node work's abort: its AbortSignal (an EventTarget, costly to build on every task) is made the
 * first time the work asks for it, already aborted if the abort came first.
 */
export class WorkAbort {
  private controller: AbortController | undefined;
  private abortedWith: { reason: unknown } | undefined;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWith) this.controller.abort(this.abortedWith.reason);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  get reason(): unknown {
    return this.abortedWith?.reason;
  }

  abort(reason: unknown): void {
    if (this.abortedWith) return;
    this.abortedWith = { reason };
    this.controller?.abort(reason);
  }
}

/**
 * The node work running outside a task's lock (a handler, a peer call), by task, so a cancel or a shutdown
 * can abort it. At most one per task: the driver runs one step of a task at a time.
 */
export class InFlightWork {
  private readonly running = new Map<string, WorkAbort>();

  /** Runs `work` with an abort that `abort(taskId)` or `abortAll` fires; answers whether it did, and why. */
  async run<T>(
    taskId: string,
    work: (abort: WorkAbort) => Promise<T>,
  ): Promise<{ value?: T; error?: unknown; abort: WorkAbort }> {
    const abort = new WorkAbort();
    this.running.set(taskId, abort);
    try {
      return { value: await work(abort), abort };
    } catch (error) {
      return { error, abort };
    } finally {
      this.running.delete(taskId);
    }
  }

  abort(taskId: string, reason: unknown): void {
    this.running.get(taskId)?.abort(reason);
  }

  abortAll(reason: unknown): void {
    for (const abort of this.running.values()) abort.abort(reason);
  }
}
