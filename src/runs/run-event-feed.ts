import { requireScope } from "../auth/principal.js";
import type { CallContext } from "../auth/call-context.js";
import { isTerminalRunStatus, TERMINAL_RUN_EVENT_TYPES, type RunStatus } from "../domain/run-status.js";
import type { TaskObserver } from "../engine/task-observer.js";
import type { StreamGate } from "../engine/task-admission.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { RunEvent } from "../domain/task-record.js";

/** The event-log envelope on the wire (run-event.schema.json, additionalProperties false). */
export type RunEventDoc = Omit<RunEvent, "a2a">;

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

export interface PollResult<E = RunEventDoc> {
  events: E[];
  /** Pass back as `after` for the next poll. */
  nextAfter: number;
  /** The run is over and every event has been delivered. */
  terminal: boolean;
  /** The run as the poll left it: its status and the highest sequence in its log (OpenWOP v2's poll names both). */
  run: { status: RunStatus; lastSequence: number };
}

export interface RunEventFeedOptions {
  reads: TaskReadPort;
  observer: TaskObserver;
  /** The streams limit of TENANT_LIMITS (a run's SSE event stream is one); absent: unlimited. */
  streamGate?: StreamGate;
}

/**
 * A run's event log for REST readers: the store is the source, the task observer follows live commits and
 * catches up from the store, so a follower never skips or repeats a sequence.
 */
export class RunEventFeed {
  constructor(private readonly options: RunEventFeedOptions) {}

  /**
   * Checks access (so an unknown run is a plain 404 before any stream starts), then returns the events with
   * sequence > `after` in order, following live commits, ending after the terminal event.
   */
  async open(runId: string, after: number, ctx: CallContext): Promise<AsyncGenerator<RunEventDoc>> {
    const events = await this.openStored(runId, after, ctx);
    return (async function* () {
      for await (const event of events) yield toRunEventDoc(event);
    })();
  }

  /** `open`, yielding the stored events whole (for a view that projects them itself, e.g. OpenWOP v2's). */
  async openStored(runId: string, after: number, ctx: CallContext): Promise<AsyncGenerator<RunEvent>> {
    requireScope(ctx.principal, "runs:read");
    const start = await this.options.reads.get(runId, ctx.principal.tenant);
    // Refused past the caller's streams limit before anything is followed; given back when the stream ends.
    const release = this.options.streamGate?.open(ctx.principal) ?? (() => {});
    ctx.signal?.addEventListener("abort", release, { once: true });
    const events = this.options.observer.follow(start, after + 1, { signal: ctx.signal, onOverflow: "catch-up" });
    return (async function* () {
      try {
        yield* events;
      } finally {
        release();
      }
    })();
  }

  /** Events after `after`; when there are none yet, waits up to `timeoutMs` for the next commit. */
  async poll(runId: string, after: number, timeoutMs: number, limit: number, ctx: CallContext): Promise<PollResult> {
    const page = await this.pollStored(runId, after, timeoutMs, limit, ctx);
    return { ...page, events: page.events.map(toRunEventDoc) };
  }

  /** `poll`, answering the stored events whole. */
  async pollStored(
    runId: string,
    after: number,
    timeoutMs: number,
    limit: number,
    ctx: CallContext,
  ): Promise<PollResult<RunEvent>> {
    requireScope(ctx.principal, "runs:read");
    const { reads, observer } = this.options;
    const tenant = ctx.principal.tenant;
    let record = await reads.get(runId, tenant);
    let events = await reads.readEvents(runId, after + 1, limit);
    if (events.length === 0 && !isTerminalRunStatus(record.status) && timeoutMs > 0 && !ctx.signal?.aborted) {
      // Any commit after `after` wakes the poll (also one that landed between the reads above and the wait).
      record = await observer.waitUntil({
        taskId: runId,
        tenant,
        start: record,
        until: (r) => r.version > after,
        timeoutMs,
        signal: ctx.signal,
      });
      events = await reads.readEvents(runId, after + 1, limit);
    }
    const nextAfter = events.at(-1)?.sequence ?? after;
    const terminal =
      TERMINAL_RUN_EVENT_TYPES.has(events.at(-1)?.type ?? "") ||
      (isTerminalRunStatus(record.status) && nextAfter >= record.version);
    return {
      events,
      nextAfter,
      terminal,
      run: { status: record.status, lastSequence: record.version },
    };
  }
}
