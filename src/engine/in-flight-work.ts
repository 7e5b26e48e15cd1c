/** Aborts in-flight node work at shutdown; the work re-runs after the next start (at-least-once). */
export class ShutdownSignal extends Error {}

/**
 * The node work running outside a task's lock (a handler, a peer call), by task, so a cancel or a shutdown
 * can abort it. At most one per task: the driver runs one step of a task at a time.
 */
export class InFlightWork {
  private readonly controllers = new Map<string, AbortController>();

  /** Runs `work` with a signal that `abort(taskId)` or `abortAll` fires. */
  async run<T>(taskId: string, work: (signal: AbortSignal) => Promise<T>): Promise<{ value?: T; error?: unknown; signal: AbortSignal }> {
    const controller = new AbortController();
    this.controllers.set(taskId, controller);
    try {
      return { value: await work(controller.signal), signal: controller.signal };
    } catch (error) {
      return { error, signal: controller.signal };
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
