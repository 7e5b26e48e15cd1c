import { requireScope } from "../auth/principal.js";
import type { CallContext } from "../auth/call-context.js";
import { isTerminalRunStatus } from "../domain/run-status.js";
import type { TaskSupervisor } from "../engine/task-supervisor.js";
import type { TransitionHook } from "../engine/transition-hook.js";
import type { RunEvent, TaskRecord } from "../store/task-store.js";

/** The event-log envelope on the wire (run-event.schema.json, additionalProperties false). */
export type RunEventDoc = Omit<RunEvent, "a2a">;

/** The events after which a run's log never grows. */
export const TERMINAL_RUN_EVENT_TYPES: ReadonlySet<string> = new Set(["run.completed", "run.failed", "run.cancelled"]);

/** Drops what only this host uses (the `a2a` projection a stored event carries). */
export function toRunEventDoc(event: RunEvent): RunEventDoc {
  return {
    eventId: event.eventId,
    runId: event.runId,
    ...(event.nodeId !== undefined ? { nodeId: event.nodeId } : {}),
    type: event.type,
    payload: event.payload,
    timestamp: event.timestamp,
    sequence: event.sequence,
  };
}

export interface PollResult {
  events: RunEventDoc[];
  /** Pass back as `after` for the next poll. */
  nextAfter: number;
  /** The run is over and every event has been delivered. */
  terminal: boolean;
}

export interface RunEventFeedOptions {
  supervisor: TaskSupervisor;
  hook: TransitionHook;
  /** Events a follower may have queued from live commits before it reads the store instead. */
  maxBuffered: number;
  /** Events per store read. */
  pageSize?: number;
}

/**
 * A run's event log for REST readers. The store is the source; the transition hook only says that new
 * events were committed (and hands them over when they are next in line), so a follower that fell behind,
 * or missed a commit, catches up from the store and never skips or repeats a sequence.
 */
export class RunEventFeed {
  private readonly pageSize: number;

  constructor(private readonly options: RunEventFeedOptions) {
    this.pageSize = options.pageSize ?? 500;
  }

  /**
   * Checks access (so an unknown run is a plain 404 before any stream starts), then returns the events with
   * sequence > `after` in order, following live commits, ending after the terminal event.
   */
  async open(runId: string, after: number, ctx: CallContext): Promise<AsyncGenerator<RunEventDoc>> {
    requireScope(ctx.principal, "runs:read");
    const start = await this.options.supervisor.get(runId, ctx.principal.tenant);
    return this.follow(start, after, ctx.signal);
  }

  /** Events after `after`; when there are none yet, waits up to `timeoutMs` for the next commit. */
  async poll(runId: string, after: number, timeoutMs: number, limit: number, ctx: CallContext): Promise<PollResult> {
    requireScope(ctx.principal, "runs:read");
    const { supervisor, hook } = this.options;
    let changed = false;
    let wake: (() => void) | undefined;
    // Subscribe before reading: a commit between the read and the wait still wakes us.
    const unsubscribe = hook.onTask(runId, () => {
      changed = true;
      wake?.();
    });
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => wake?.();
    ctx.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      let record = await supervisor.get(runId, ctx.principal.tenant);
      let events = await supervisor.store.readEvents(runId, after + 1, limit);
      if (events.length === 0 && !isTerminalRunStatus(record.status) && timeoutMs > 0 && !ctx.signal?.aborted) {
        if (!changed) {
          await new Promise<void>((resolve) => {
            wake = resolve;
            timer = setTimeout(resolve, timeoutMs);
          });
        }
        record = await supervisor.get(runId, ctx.principal.tenant);
        events = await supervisor.store.readEvents(runId, after + 1, limit);
      }
      const nextAfter = events.at(-1)?.sequence ?? after;
      const terminal = events.some((e) => TERMINAL_RUN_EVENT_TYPES.has(e.type)) || (isTerminalRunStatus(record.status) && nextAfter >= record.version);
      return { events: events.map(toRunEventDoc), nextAfter, terminal };
    } finally {
      clearTimeout(timer);
      unsubscribe();
      ctx.signal?.removeEventListener("abort", onAbort);
    }
  }

  private async *follow(start: TaskRecord, after: number, signal?: AbortSignal): AsyncGenerator<RunEventDoc> {
    const { supervisor, hook, maxBuffered } = this.options;
    const inbox: RunEvent[] = [];
    let overflowed = false;
    let wake: (() => void) | undefined;
    const notify = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    const unsubscribe = hook.onTask(start.taskId, ({ events }) => {
      if (inbox.length + events.length > maxBuffered) {
        overflowed = true;
        inbox.length = 0;
      } else {
        inbox.push(...events);
      }
      notify();
    });
    signal?.addEventListener("abort", notify);
    let next = after + 1;
    // Start from the store: it holds everything committed before the subscription above.
    let readStore = true;
    try {
      for (;;) {
        if (signal?.aborted) return;
        let batch: RunEvent[];
        if (readStore || overflowed) {
          readStore = false;
          overflowed = false;
          inbox.length = 0; // what arrives from now on is newer than (or also in) this read
          batch = await supervisor.store.readEvents(start.taskId, next, this.pageSize);
          if (batch.length === this.pageSize) readStore = true;
          // A run that had already ended when we started has nothing more to come after its log.
          else if (batch.length === 0 && isTerminalRunStatus(start.status)) return;
        } else if (inbox.length > 0) {
          batch = inbox.splice(0);
        } else {
          await new Promise<void>((resolve) => (wake = resolve));
          continue;
        }
        for (const event of batch) {
          if (event.sequence < next) {
            if (TERMINAL_RUN_EVENT_TYPES.has(event.type)) return; // the run ended before the resume point
            continue;
          }
          if (event.sequence > next) {
            readStore = true; // a gap: the hook missed something, the store has it
            break;
          }
          yield toRunEventDoc(event);
          next = event.sequence + 1;
          if (TERMINAL_RUN_EVENT_TYPES.has(event.type)) return;
        }
      }
    } finally {
      unsubscribe();
      signal?.removeEventListener("abort", notify);
    }
  }
}
