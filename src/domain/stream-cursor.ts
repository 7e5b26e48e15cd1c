import { invalidParams } from "./errors.js";

/**
 * Where a stream stands in its task's log, sent as each A2A SSE event's `id:` and read back from
 * `Last-Event-ID` (gRPC/Connect: `a2a-last-event-id`) to resume: `${taskId}:${sequence}`, the id of the log
 * event the stream event came from (the same id push sends as `X-A2A-Event-Id`); an update that is not the
 * last one made of its log event gets `${taskId}:${sequence}.${part}`, so a resume sends the rest of that
 * event. The task id binds a cursor to its task: one naming another task is unknown, not a position.
 */
export interface StreamCursor {
  taskId: string;
  /** The log event (its sequence) the stream has delivered. */
  sequence: number;
  /** Only this many updates of that event were delivered (index of the last one); absent = all of them. */
  part?: number;
}

const CURSOR = /^(.{1,256}):(0|[1-9]\d{0,14})(?:\.(0|[1-9]\d{0,2}))?$/su;

export function formatStreamCursor(cursor: StreamCursor): string {
  return `${cursor.taskId}:${cursor.sequence}${cursor.part === undefined ? "" : `.${cursor.part}`}`;
}

/** A `Last-Event-ID` as sent; anything that is not a cursor this host could have sent is invalid params. */
export function parseStreamCursor(raw: string, path = "Last-Event-ID"): StreamCursor {
  const found = CURSOR.exec(raw.trim());
  // The value is not repeated back: it is the caller's, of any length and content.
  if (!found || /[\r\n]/.test(found[1]!)) {
    throw invalidParams(
      `${path} must be the id of an event this stream sent ("<taskId>:<sequence>", a non-negative integer sequence)`,
      { path },
    );
  }
  return {
    taskId: found[1]!,
    sequence: Number(found[2]),
    ...(found[3] !== undefined ? { part: Number(found[3]) } : {}),
  };
}

/**
 * The cursor of a stream item, kept beside it (the wire shapes have no field for it): tagged once where the
 * update is made, carried through every encoding (`mapStream`), read by the SSE writer for the `id:` line.
 */
const cursors = new WeakMap<object, string>();

export function tagStreamCursor<T>(item: T, cursor: string): T {
  if (typeof item === "object" && item !== null) cursors.set(item, cursor);
  return item;
}

export function streamCursorOf(item: unknown): string | undefined {
  return typeof item === "object" && item !== null ? cursors.get(item) : undefined;
}
