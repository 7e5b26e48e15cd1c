/** Aborts in-flight node work at shutdown; the work re-runs after the next start (at-least-once). */
export class ShutdownSignal extends Error {}

/**
 * The node work running outside a task's lock (a handler, a peer call), by task, so a cancel or a shutdown
 * can abort it. At most one per task: the driver runs one step of a task at a time.
 */
export class InFlightWork {
  private readonly controllers = new Map<string, LazyAbortController>();

  /**
   * Runs `work` with a signal that `abort(taskId)` or `abortAll` fires (made when first read: most handlers,
   * the pure built-in ones, never read it). `abort` tells whether and why the work was aborted.
   */
  async run<T>(taskId: string, work: (abortable: { readonly signal: AbortSignal }) => Promise<T>): Promise<{ value?: T; error?: unknown; abort: Aborted }> {
    const controller = new LazyAbortController();
    this.controllers.set(taskId, controller);
    try {
      return { value: await work(controller), abort: controller };
    } catch (error) {
      return { error, abort: controller };
    } finally {
      this.controllers.delete(taskId);
    }
  }

  abort(taskId: string, reason: unknown): void {
    this.controllers.get(taskId)?.abort(reason);
  }

  abortAll(reason: unknown): void {
    for (const controller of this.controllers.values()) controller.abort(reason);
  }
}

export interface Aborted {
  readonly aborted: boolean;
  readonly reason: unknown;
}

/** An AbortController whose signal exists only once it is read or aborted (an AbortSignal is costly to make). */
class LazyAbortController implements Aborted {
  private controller: AbortController | undefined;

  get signal(): AbortSignal {
    return (this.controller ??= new AbortController()).signal;
  }

  get aborted(): boolean {
    return this.controller?.signal.aborted ?? false;
  }

  get reason(): unknown {
    return this.controller?.signal.reason;
  }

  abort(reason: unknown): void {
    (this.controller ??= new AbortController()).abort(reason);
  }
}
