import { isTerminalA2AState } from "../domain/run-status.js";
import type { TaskRecord } from "../domain/task-record.js";
import type { TaskObserver } from "../engine/task-observer.js";

/**
 * Whether a long-poll for `after` is answered by `record`: its generation exceeds it, or it will never change
 * again, or it has no generation (last written before generations existed: no commit would ever tell, so the
 * caller is answered at once rather than held to the cap).
 */
export function generationPassed(record: TaskRecord, after: number): boolean {
  return record.generation === undefined || record.generation > after || isTerminalA2AState(record.a2a.state);
}

interface SharedWait {
  /** Ends the observer's wait once no caller is left. */
  stop: AbortController;
  closed: boolean;
  callers: number;
  result: Promise<TaskRecord>;
}

/**
 * The waits of long-polling GetTasks (A2A 1.1 draft `currentGeneration`). Callers asking about the same task,
 * tenant and generation share ONE observer wait (one hook listener, one commit-feed listener, one store read
 * per noticed commit), so a thousand long-polls on a task cost one wait and are all answered by the commit
 * that passes the generation. Each caller keeps its own timeout and abort; the last one to leave ends the wait.
 */
export class GenerationWaits {
  private readonly shared = new Map<string, SharedWait>();
  private callers = 0;
  /** Observer waits open now (each holds a hook and a feed listener). */
  private open = 0;

  constructor(
    private readonly observer: TaskObserver,
    private readonly maxWaitMs: number,
  ) {}

  /** Callers waiting now, and the observer waits they share. */
  get waiting(): { callers: number; waits: number } {
    return { callers: this.callers, waits: this.open };
  }

  /** The task's record once its generation passed `after`; undefined at `timeoutMs` or when `signal` aborts. */
  async wait(
    start: TaskRecord,
    after: number,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<TaskRecord | undefined> {
    if (signal?.aborted) return undefined;
    const key = `${start.tenant}\u0000${start.taskId}\u0000${after}`;
    const entry = this.shared.get(key) ?? this.start(key, start, after);
    entry.callers++;
    this.callers++;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const mine = new Promise<undefined>((resolve) => {
      timer = setTimeout(resolve, timeoutMs, undefined);
      onAbort = () => resolve(undefined);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const record = await Promise.race([entry.result, mine]);
      return record && generationPassed(record, after) ? record : undefined;
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
      this.callers--;
      if (--entry.callers === 0) this.close(key, entry);
    }
  }

  private start(key: string, start: TaskRecord, after: number): SharedWait {
    const stop = new AbortController();
    this.open++;
    const result = this.observer.waitUntil({
      taskId: start.taskId,
      tenant: start.tenant,
      start,
      until: (r) => generationPassed(r, after),
      timeoutMs: this.maxWaitMs,
      signal: stop.signal,
    });
    const entry: SharedWait = { stop, closed: false, callers: 0, result };
    // Settled (passed, at the cap, or failed): later callers start a new wait. A failure reaches the callers waiting.
    result.then(
      () => this.close(key, entry),
      () => this.close(key, entry),
    );
    this.shared.set(key, entry);
    return entry;
  }

  private close(key: string, entry: SharedWait): void {
    if (this.shared.get(key) === entry) this.shared.delete(key);
    if (entry.closed) return;
    entry.closed = true;
    this.open--;
    entry.stop.abort();
  }
}
