import type { StreamEvent, Task, TaskStatusUpdate } from "../domain/a2a-types.js";
import type { CallContext } from "../auth/call-context.js";
import type { TaskObserver } from "../engine/task-observer.js";
import {
  afterFanOut,
  onceSink,
  withLive,
  type LiveIterable,
  type LiveSink,
  type StopLive,
} from "../domain/live-stream.js";
import { formatStreamCursor, tagStreamCursor, type StreamCursor } from "../domain/stream-cursor.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import type { HistoryLimit } from "./task-view.js";
import type { StreamGate } from "../engine/task-admission.js";

export interface TaskStreamsOptions {
  /** Waits and streams; its buffer is how far a subscriber may fall behind before it is dropped. */
  observer: TaskObserver;
  /** The Task as of a record, as the caller sees it (the service's view: history, interrupt token). */
  view(record: TaskRecord, history: HistoryLimit, ctx: CallContext): Promise<Task>;
  /**
   * STREAM_RESUME_MAX_EVENTS: how many log events a resumed subscription replays at most; a cursor further
   * behind gets the Task snapshot first instead (marked `metadata.openwop.resume: "snapshot"`).
   */
  resumeMaxEvents?: number;
  /** The streams limit (TENANT_LIMITS): asked as a stream opens; what it answers is called when the stream ends. */
  gate?: StreamGate;
}

/**
 * A task's live observation, for `message/stream` and the re-attaching subscriptions: where a stream starts (a
 * resume cursor, or the Task), then each committed event derived into A2A status and artifact updates, in commit
 * order, through the async iterator or the live lane (`domain/live-stream.ts`), until the state where the stream
 * ends. The TaskService says what is opened (a new task, a reply, a re-attach) and under which rules.
 */
export class TaskStreams {
  constructor(private readonly options: TaskStreamsOptions) {}

  /** The stream of what `open` answers: its Task (or a stateless skill's Message), then the updates. */
  stream(open: () => Promise<Opened>, ctx: CallContext): AsyncGenerator<StreamEvent> & LiveIterable<StreamEvent> {
    const slot = this.slotFor(open, ctx);
    return withLive(this.observe(slot, ctx), (sink: LiveSink<StreamEvent>) => this.observeLive(slot, ctx, sink));
  }

  /** The stream's place under its caller's streams limit: taken as it opens (refused past it), given back at its end. */
  private slotFor(open: () => Promise<Opened>, ctx: CallContext): Slot {
    const gate = this.options.gate;
    if (!gate) return { open, release: () => {} };
    let release = (): void => {};
    return {
      open: async () => {
        release = gate.open(ctx.principal);
        try {
          return await open();
        } catch (err) {
          release();
          throw err;
        }
      },
      release: () => release(),
    };
  }

  /**
   * Where a subscription with a cursor starts. A cursor of this task within the replay window: no Task, the
   * log events after it (the rest of a partly sent event first), in order, then live; a task that ended
   * meanwhile replays through its terminal event and closes. Any other cursor (another task, ahead of the
   * log, or further behind than STREAM_RESUME_MAX_EVENTS) is unknown: the Task snapshot first, marked so, then
   * live, as a fresh subscription (a terminal task: its snapshot, then the stream closes; never refused).
   */
  resumeOf(record: TaskRecord, cursor: StreamCursor): { resume: Resume } {
    const behind = record.version - cursor.sequence;
    const known =
      cursor.taskId === record.taskId &&
      behind >= 0 &&
      behind <= (this.options.resumeMaxEvents ?? DEFAULT_RESUME_MAX_EVENTS);
    return { resume: known ? { after: cursor } : "snapshot" };
  }

  /**
   * Streams a task from `start`: the Task as of that commit, then every A2A update after it, in commit
   * order (the observer catches up from the store), until a state where `endsAt` says the stream ends (its
   * status update carries `final: true`). A subscriber that falls too far behind is dropped and may resubscribe.
   */
  private async *observe(slot: Slot, ctx: CallContext): AsyncGenerator<StreamEvent> {
    try {
      yield* this.observeOpened(await slot.open(), ctx);
    } finally {
      slot.release();
    }
  }

  private async *observeOpened(opened: Opened, ctx: CallContext): AsyncGenerator<StreamEvent> {
    if (!("start" in opened)) {
      yield opened;
      return;
    }
    const { start, endsAt } = opened;
    const after = typeof opened.resume === "object" ? opened.resume.after : undefined;
    if (!after) {
      yield await this.firstTask(opened, ctx);
      if (endsAt(start.a2a.state)) return;
    }
    for await (const event of this.options.observer.follow(start, followFrom(start, after), {
      signal: ctx.signal,
      onOverflow: "drop",
    })) {
      for (const update of updatesAfter(start, event, endsAt, after)) {
        yield update;
        if (update.kind === "status-update" && update.final) return;
      }
    }
  }

  /** The Task a stream opens with, its cursor the version it shows; marked when it stands in for a resume. */
  private async firstTask(opened: Extract<Opened, { start: TaskRecord }>, ctx: CallContext): Promise<StreamEvent> {
    const { start, history } = opened;
    const task = await this.options.view(start, history, ctx);
    const shown =
      opened.resume === "snapshot"
        ? { ...task, metadata: { ...task.metadata, openwop: { ...openwopOf(task), resume: "snapshot" } } }
        : task;
    return tagStreamCursor(
      { kind: "task", task: shown },
      formatStreamCursor({ taskId: start.taskId, sequence: start.version }),
    );
  }

  /**
   * `observe` through a sink (the live lane, `domain/live-stream.ts`): the same events, but after the Task
   * (an async read) each update is handed over synchronously inside the commit's delivery to the task's
   * followers. A failure before the Task reaches the sink as its first call (`fail`).
   */
  private observeLive(slot: Slot, ctx: CallContext, target: LiveSink<StreamEvent>): StopLive {
    const sink = onceSink(target);
    let following: StopLive | undefined;
    let stopped = false;
    const stop = (): void => {
      if (stopped) return;
      stopped = true;
      slot.release();
      // Nothing is passed on from now; the rest is let go of after the commit's fan-out.
      afterFanOut(() => {
        following?.();
        ctx.signal?.removeEventListener("abort", onAbort);
      });
    };
    const close = (last: () => void): void => {
      stop();
      last();
    };
    // The caller's request was aborted (shutdown): the stream ends, as `follow` ends on its signal.
    const onAbort = (): void => close(() => sink.end());
    void (async () => {
      const opened = await slot.open();
      if (stopped) return slot.release();
      if (!("start" in opened)) return close(() => (sink.next(opened), sink.end()));
      const { start, endsAt } = opened;
      const after = typeof opened.resume === "object" ? opened.resume.after : undefined;
      if (!after) {
        const first = await this.firstTask(opened, ctx);
        if (stopped) return;
        sink.next(first);
        if (endsAt(start.a2a.state)) return close(() => sink.end());
      }
      if (ctx.signal?.aborted) return close(() => sink.end());
      // A resume may have nothing to replay yet: its headers go out now, not with the next commit.
      if (after) target.opened?.();
      ctx.signal?.addEventListener("abort", onAbort, { once: true });
      following = this.options.observer.followLive(start, followFrom(start, after), {
        next: (event) => {
          for (const update of updatesAfter(start, event, endsAt, after)) {
            if (stopped) return;
            sink.next(update);
            if (update.kind === "status-update" && update.final) return close(() => sink.end());
          }
        },
        end: () => close(() => sink.end()),
        fail: (err) => close(() => sink.fail(err)),
        backlog: target.backlog,
        flush: target.flush,
      });
    })().catch((err: unknown) => {
      if (!stopped) close(() => sink.fail(err));
    });
    return stop;
  }
}

/**
 * Where a stream starts: a stateless skill's one Message, or a task record and when its stream ends; a
 * resumed subscription starts after its cursor, or with the Task snapshot marked as standing in for one.
 */
export type Opened =
  | Extract<StreamEvent, { kind: "message" }>
  | { start: TaskRecord; history: HistoryLimit; endsAt: EndsAt; resume?: Resume };

type Resume = { after: StreamCursor } | "snapshot";

/** How a stream opens, and its place under the streams limit given back (once, whichever way it ends). */
interface Slot {
  open: () => Promise<Opened>;
  release: () => void;
}

/** Replay window of a resumed subscription when none is configured (STREAM_RESUME_MAX_EVENTS). */
export const DEFAULT_RESUME_MAX_EVENTS = 10_000;

/** The first log event a stream follows: after the Task's version, or after the cursor (its event again when only part of it was sent). */
function followFrom(start: TaskRecord, after: StreamCursor | undefined): number {
  if (!after) return start.version + 1;
  return after.part === undefined ? after.sequence + 1 : after.sequence;
}

/** The updates of `event` the stream has not sent: past `after.part` for the event the cursor names. */
function updatesAfter(
  task: TaskRecord,
  event: RunEvent,
  endsAt: EndsAt,
  after: StreamCursor | undefined,
): StreamEvent[] {
  const updates = updatesOf(task, event, endsAt);
  return after?.part !== undefined && event.sequence === after.sequence ? updates.slice(after.part + 1) : updates;
}

function openwopOf(task: Task): Record<string, unknown> {
  const value = task.metadata["openwop"];
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

type EndsAt = (state: TaskRecord["a2a"]["state"]) => boolean;

/**
 * The updates of one committed event, made once for all the streams of its task: every follower receives
 * the same event object, so with the same `endsAt` they share (and must not change) the same updates, and
 * the codecs can encode them once too.
 */
const sharedUpdates = new WeakMap<RunEvent, { endsAt: EndsAt; updates: StreamEvent[] }>();

function updatesOf(task: TaskRecord, event: RunEvent, endsAt: EndsAt): StreamEvent[] {
  const shared = sharedUpdates.get(event);
  if (shared?.endsAt === endsAt) return shared.updates;
  const updates = newUpdatesOf(task, event, endsAt);
  sharedUpdates.set(event, { endsAt, updates });
  return updates;
}

/** Each update carries its cursor (the SSE `id:`): `${taskId}:${sequence}`, with `.${part}` on all but the last of its event. */
function newUpdatesOf(task: TaskRecord, event: RunEvent, endsAt: EndsAt): StreamEvent[] {
  const updates = newUpdatesOfEvent(task, event, endsAt);
  updates.forEach((update, i) =>
    tagStreamCursor(
      update,
      formatStreamCursor({
        taskId: task.taskId,
        sequence: event.sequence,
        ...(i < updates.length - 1 ? { part: i } : {}),
      }),
    ),
  );
  return updates;
}

function newUpdatesOfEvent(task: TaskRecord, event: RunEvent, endsAt: EndsAt): StreamEvent[] {
  const updates: StreamEvent[] = [];
  // An event's artifact update comes before its status update, and the generation it carries is after both.
  const generation = event.a2a?.generation;
  if (event.a2a?.artifact) {
    const { artifact, append = false, lastChunk = true } = event.a2a;
    const after = generation !== undefined && event.a2a.status ? generation - 1 : generation;
    updates.push({
      kind: "artifact-update",
      taskId: task.taskId,
      contextId: task.contextId,
      artifact,
      append,
      lastChunk,
      ...(after !== undefined ? { generation: after } : {}),
    });
  }
  if (event.a2a?.status) {
    const update: TaskStatusUpdate = {
      kind: "status-update",
      taskId: task.taskId,
      contextId: task.contextId,
      status: event.a2a.status,
      final: endsAt(event.a2a.status.state),
      ...(event.a2a.metadata ? { metadata: event.a2a.metadata } : {}),
      ...(generation !== undefined ? { generation } : {}),
    };
    updates.push(update);
  }
  return updates;
}
