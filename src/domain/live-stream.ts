import { streamCursorOf, tagStreamCursor } from "./stream-cursor.js";

/**
 * The live lane of a stream: items pushed synchronously into a sink, so that a commit reaches every SSE
 * subscriber of its task inside one loop (the channel's `deliver`), with no promise hop per stream. A
 * `LiveIterable` is also an ordinary AsyncIterable (gRPC/Connect and any other consumer iterate it); a
 * consumer that knows the lane calls `live(sink)` instead. Nothing runs until one of them is used, once.
 */

/**
 * Where a live stream's items go, in order, never before `live` returned. After `end` or `fail` nothing
 * more is called; a sink must not throw.
 */
export interface LiveSink<T> {
  next(value: T): void;
  end(): void;
  /** The stream failed: before any `next`, before its first item (the consumer answers a plain error); else midway. */
  fail(err: unknown): void;
  /**
   * Items handed over that the consumer has not flushed yet (a slow consumer is dropped past the subscriber
   * buffer). This and `flush` are called unbound: the layers in between hand the consumer's own on.
   */
  backlog?: () => number;
  /** The items of one commit were all handed over: the consumer may send them now, together. */
  flush?: () => void;
  /**
   * The stream is open and can no longer fail before its first item (a resumed subscription may have nothing
   * to send yet): the consumer may answer its headers now. Called unbound, like `backlog` and `flush`.
   */
  opened?: () => void;
}

/** Stops a live stream from the consumer's side: the sink hears nothing more, everything held is released. */
export type StopLive = () => void;

export interface LiveIterable<T> extends AsyncIterable<T> {
  live(sink: LiveSink<T>): StopLive;
}

/** `events` (not started: an async generator runs nothing before its first `next`) that can also be consumed live. */
export function withLive<I extends AsyncIterable<T>, T>(
  events: I,
  live: (sink: LiveSink<T>) => StopLive,
): I & LiveIterable<T> {
  return Object.assign(events, { live });
}

export function isLive<T>(events: AsyncIterable<T>): events is LiveIterable<T> {
  return typeof (events as Partial<LiveIterable<T>>).live === "function";
}

/**
 * `events` with `map` applied to each item, leaving out the items it maps to undefined; still live when
 * `events` is (the map then runs synchronously in the lane). An item's stream cursor (its SSE id) goes with it.
 */
export function mapStream<T, U>(events: AsyncIterable<T>, convert: (value: T) => U | undefined): AsyncIterable<U> {
  const map = (value: T): U | undefined => {
    const item = convert(value);
    const cursor = streamCursorOf(value);
    return cursor === undefined ? item : tagStreamCursor(item, cursor);
  };
  const mapped = (async function* (): AsyncGenerator<U> {
    for await (const value of events) {
      const item = map(value);
      if (item !== undefined) yield item;
    }
  })();
  if (!isLive(events)) return mapped;
  return withLive(mapped, (sink: LiveSink<U>) => {
    // A map that throws fails the stream, as it would fail the iteration.
    let failed = false;
    const stop = events.live({
      next: (value) => {
        if (failed) return;
        let mapped: U | undefined;
        try {
          mapped = map(value);
        } catch (err) {
          failed = true;
          stop();
          sink.fail(err);
          return;
        }
        if (mapped !== undefined) sink.next(mapped);
      },
      end: () => {
        if (!failed) sink.end();
      },
      fail: (err) => {
        if (!failed) sink.fail(err);
      },
      backlog: sink.backlog,
      flush: sink.flush,
      opened: sink.opened,
    });
    return stop;
  });
}

let later: (() => void)[] = [];

/**
 * Runs `release` on the next turn of the event loop, with every other release of this turn (one
 * setImmediate for all). For what a stream lets go of when it ends or stops (channel membership, listeners,
 * the response's end): a commit that ends 1 000 streams writes all their frames first, then tears them down.
 */
export function afterFanOut(release: () => void): void {
  if (later.length === 0) setImmediate(releaseAll);
  later.push(release);
}

function releaseAll(): void {
  const now = later;
  later = [];
  for (const release of now) release();
}

/** A sink that passes on at most one `end` or `fail`, and nothing after it. */
export function onceSink<T>(sink: LiveSink<T>): LiveSink<T> & { readonly closed: boolean } {
  let closed = false;
  return {
    get closed() {
      return closed;
    },
    next: (value) => {
      if (!closed) sink.next(value);
    },
    end: () => {
      if (closed) return;
      closed = true;
      sink.end();
    },
    fail: (err) => {
      if (closed) return;
      closed = true;
      sink.fail(err);
    },
    backlog: sink.backlog,
    flush: sink.flush,
    opened: sink.opened,
  };
}
