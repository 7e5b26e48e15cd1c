import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { DomainError } from "../domain/errors.js";
import { afterFanOut, isLive, type LiveIterable, type StopLive } from "../domain/live-stream.js";
import { oncePerObject } from "../domain/once-per-object.js";
import { streamCursorOf } from "../domain/stream-cursor.js";
import { settleUnreadBody } from "./unread-request-body.js";

/** HTTP/1.1 and h2c requests share one handler through Node's compatibility API. */
export type HttpRequest = IncomingMessage | Http2ServerRequest;
export type HttpResponse = ServerResponse | Http2ServerResponse;

/**
 * Reads the whole body, refusing more than `limit` bytes before buffering it. A refused HTTP/1.1 body is left
 * to `sendJson`'s answer, which drains it or closes the connection (unread-request-body.ts); an HTTP/2
 * stream is reset. Events rather than `for await`: the async iterator cost more than the rest of reading a
 * small body.
 */
export function readBody(req: HttpRequest, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (err: unknown): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", settle);
      req.off("close", onClose);
      if (err) reject(err);
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      settle(tooLarge(limit));
      // HTTP/1.1: still flowing with no listener, so what arrives until the answer is dropped.
      if ("stream" in req) req.destroy();
    };
    const onEnd = (): void => settle(null);
    const onClose = (): void =>
      settle(
        Object.assign(new Error("the request closed before its body ended"), { code: "ERR_STREAM_PREMATURE_CLOSE" }),
      );
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", settle);
    req.on("close", onClose);
  });
}

function tooLarge(limit: number): DomainError {
  return new DomainError("payload-too-large", `the request body is larger than the limit of ${limit} bytes`, {
    limitBytes: limit,
  });
}

export function mediaTypeOf(req: HttpRequest): string {
  return String(req.headers["content-type"] ?? "")
    .split(";")[0]!
    .trim()
    .toLowerCase();
}

export function sendJson(res: HttpResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  // An answer before the body was read to its end (413, 401, 415 ...) drains it or closes the connection.
  settleUnreadBody((res as ServerResponse).req, res);
  (res as ServerResponse).writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** A value already serialized: SSE writes its text as the `data:`, and its stream cursor, if any, as the `id:`. */
export class JsonText {
  private frame: Buffer | undefined;
  private chunk: Buffer | undefined;

  constructor(
    readonly text: string,
    readonly sseId?: string,
  ) {}

  /** The SSE frame `[id: <sseId>\n]data: <text>`, made once for all the streams that send this same text. */
  get dataFrame(): Buffer {
    return (this.frame ??= Buffer.from(`${idLine(this.sseId)}data: ${this.text}\n\n`));
  }

  /** `dataFrame` as one HTTP/1.1 chunk (size line, frame, CRLF): what a chunked response writes for it. */
  get dataChunk(): Buffer {
    if (this.chunk) return this.chunk;
    const frame = this.dataFrame;
    return (this.chunk = Buffer.concat([Buffer.from(`${frame.length.toString(16)}\r\n`, "latin1"), frame, CRLF]));
  }
}

const CRLF = Buffer.from("\r\n", "latin1");

/**
 * JSON of a value that many streams send (the same encoded update, see `a2a/task-service.ts`), serialized
 * once. The value must not change after it was sent.
 */
export const sharedJson: (value: unknown) => string = oncePerObject(
  (value: unknown) => JSON.stringify(value) ?? "null",
);

/** `sharedJson` as a JsonText: the streams sending the same value also share its SSE frame. */
export const sharedJsonText: (value: unknown) => JsonText = oncePerObject(
  (value: unknown) => new JsonText(sharedJson(value), streamCursorOf(value)),
);

/** The SSE `id:` line of a stream cursor (`domain/stream-cursor.ts`), or nothing. */
function idLine(id: string | number | undefined): string {
  return id === undefined ? "" : `id: ${id}\n`;
}

/** Server-Sent Events on either protocol version; honours back-pressure and sends keepalive comments. */
export class SseWriter {
  private keepalive: NodeJS.Timeout | undefined;
  private closed = false;
  private unflushed = 0;
  /** The socket `sendNow` corked, until `flush`. */
  private corked: Socket | undefined;
  /** Shared chunks `sendNow` holds for `heldSocket` until `flush`. */
  private held: Buffer[] = [];
  private heldSocket: Socket | undefined;
  /** In `queuedWriters`, to be flushed after the fan-out. */
  private queued = false;

  constructor(
    private readonly res: HttpResponse,
    keepaliveMs = 15_000,
    headers: Record<string, string> = {},
  ) {
    const h1 = !("stream" in res);
    (res as ServerResponse).writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
      ...(h1 ? { connection: "keep-alive" } : {}),
      ...headers,
    });
    // Node holds the headers back until the first body write; a quiet stream would leave the caller waiting.
    (res as ServerResponse).flushHeaders();
    res.on("close", () => this.stop());
    this.keepalive = setInterval(() => void this.write(": keepalive\n\n"), keepaliveMs);
    this.keepalive.unref();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async send(data: unknown, options: { event?: string; id?: string | number } = {}): Promise<void> {
    await this.write(frameOf(data, options));
  }

  /**
   * Writes the frame now, without waiting for the client to read the ones before (the live lane); the
   * frames it could not flush yet count in `backlog`, which the caller bounds.
   */
  sendNow(data: unknown, options: { event?: string } = {}): void {
    if (this.closed || this.res.writableEnded) return;
    const res = this.res as ServerResponse;
    // A frame many streams share goes to the socket as the one chunk they share, held until `flush`: one
    // plain write per stream and commit, with no chunk framing, string conversion or corking per stream.
    const socket = data instanceof JsonText && !options.event ? chunkedSocketOf(res) : undefined;
    if (socket) {
      this.held.push((data as JsonText).dataChunk);
      this.heldSocket = socket;
      this.queue();
      return;
    }
    this.flush(); // what is held goes out first
    this.cork();
    if (res.write(frameOf(data, options)) && this.unflushed === 0) return;
    if (this.unflushed++ === 0) res.once("drain", () => (this.unflushed = 0));
  }

  /** Sends what `sendNow` wrote since the last flush (one write to the socket); else it goes after the fan-out. */
  flush(): void {
    this.queued = false;
    const held = this.held;
    if (held.length > 0) {
      const socket = this.heldSocket!;
      this.held = [];
      const written = socket.write(held.length === 1 ? held[0]! : Buffer.concat(held));
      if (!written || this.unflushed > 0) {
        if (this.unflushed === 0) socket.once("drain", () => (this.unflushed = 0));
        this.unflushed += held.length;
      }
    }
    const corked = this.corked;
    this.corked = undefined;
    corked?.uncork();
  }

  /**
   * Node corks an HTTP/1.1 socket on a response's first write of a tick and uncorks it on a process.nextTick
   * of its own: with async hooks on (AsyncLocalStorage), each of those ticks costs more than the write, and
   * every frame of a fan-out would wait for its end. The writer corks the socket itself and uncorks it at
   * `flush`, or at the latest in one microtask for all writers right after the fan-out.
   */
  private cork(): void {
    if (this.corked || "stream" in this.res) return; // HTTP/2: the session's socket is not the response's to cork
    const socket = this.res.socket;
    if (!socket || socket.writableCorked) return;
    socket.cork();
    this.corked = socket;
    this.queue();
  }

  /** Flushes this writer in the microtask after the fan-out if its sink's `flush` has not by then. */
  private queue(): void {
    if (this.queued) return;
    this.queued = true;
    if (queuedWriters.length === 0) queueMicrotask(flushQueued);
    queuedWriters.push(this);
  }

  /** Frames written by `sendNow` since the response last had to buffer them, until it drains. */
  get backlog(): number {
    return this.unflushed;
  }

  end(): void {
    this.stop();
    this.flush();
    if (!this.res.writableEnded) this.res.end();
  }

  private stop(): void {
    this.closed = true;
    clearInterval(this.keepalive);
  }

  private async write(frame: string | Buffer): Promise<void> {
    if (this.closed || this.res.writableEnded) return;
    const res = this.res as ServerResponse;
    this.flush();
    if (!res.write(frame)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
}

/**
 * The socket of an HTTP/1.1 response that sends chunked and has nothing of its own waiting (headers out, not
 * queued behind a pipelined response): a chunk written straight to it lands where `res.write` would put it.
 */
function chunkedSocketOf(res: ServerResponse): Socket | undefined {
  const internal = res as ServerResponse & { chunkedEncoding?: boolean; outputData?: unknown[] };
  if (!internal.chunkedEncoding || !res.headersSent || internal.outputData?.length !== 0) return undefined;
  const socket = res.socket;
  return socket && (socket as Socket & { _httpMessage?: unknown })._httpMessage === res && socket.writable
    ? socket
    : undefined;
}

/** The writers that held frames or corked their socket in this turn; one microtask flushes them all. */
let queuedWriters: SseWriter[] = [];

function flushQueued(): void {
  const now = queuedWriters;
  queuedWriters = [];
  for (const writer of now) writer.flush();
}

function frameOf(data: unknown, options: { event?: string; id?: string | number }): string | Buffer {
  if (data instanceof JsonText && options.id === undefined && !options.event) return data.dataFrame;
  let frame = idLine(options.id ?? (data instanceof JsonText ? data.sseId : undefined));
  if (options.event) frame += `event: ${options.event}\n`;
  return frame + `data: ${data instanceof JsonText ? data.text : JSON.stringify(data)}\n\n`;
}

export interface SsePipeOptions<T> {
  /** The `data:` of one event. */
  encode(value: T): unknown;
  /** The stream failed before its first event: answer however the protocol wants (plain error or SSE). */
  failedBeforeFirst(err: unknown): void | Promise<void>;
  /** The `data:` of the `event: error` frame that ends a stream failing midway (log there if needed). */
  errorFrame(err: unknown): unknown;
  headers?: Record<string, string>;
}

/**
 * Writes a stream of results as SSE. The first result is awaited before any header goes out, so an early
 * failure (unknown task, bad input) can still answer with a proper status; a caller that goes away ends
 * the source stream.
 */
async function pipeToSse<T>(res: HttpResponse, events: AsyncIterable<T>, options: SsePipeOptions<T>): Promise<void> {
  const iterator = events[Symbol.asyncIterator]();
  let first: IteratorResult<T>;
  try {
    first = await iterator.next();
  } catch (err) {
    await options.failedBeforeFirst(err);
    return;
  }
  const sse = new SseWriter(res, 15_000, options.headers);
  res.on("close", () => void iterator.return?.(undefined));
  try {
    for (let step = first; !step.done; step = await iterator.next()) {
      if (sse.isClosed) break;
      await sse.send(options.encode(step.value));
    }
  } catch (err) {
    await sse.send(options.errorFrame(err), { event: "error" });
  } finally {
    sse.end();
  }
}

/**
 * `pipeToSse` for a live stream (`domain/live-stream.ts`): the same answers, but each frame is written
 * synchronously as the stream hands its item over (a commit reaches all of a task's streams in one loop).
 * The first item still comes before any header, so a failure before it answers a proper error. A client
 * that does not read is not waited for: its unflushed frames are the stream's backlog, bounded upstream (it
 * is dropped with the error frame). The response ends on the next turn of the loop, so the ends of many
 * streams do not hold back the frames of the others.
 */
function liveToSse<T>(res: HttpResponse, events: LiveIterable<T>, options: SsePipeOptions<T>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let sse: SseWriter | undefined;
    let done = false;
    const open = (): SseWriter => (sse ??= new SseWriter(res, 15_000, options.headers));
    const finish = (end: () => void): void => {
      if (done) return;
      done = true;
      stop();
      end();
    };
    const stop: StopLive = events.live({
      next: (value) => {
        if (!done) open().sendNow(options.encode(value));
      },
      end: () => {
        if (done) return;
        const writer = open();
        finish(() => afterFanOut(() => (writer.end(), resolve())));
      },
      fail: (err) => {
        if (done) return;
        const writer = sse;
        // Before the first item: the protocol's plain answer; one that throws (HTTP+JSON rethrows) rejects.
        if (!writer)
          return finish(
            () =>
              void Promise.resolve()
                .then(() => options.failedBeforeFirst(err))
                .then(() => resolve(), reject),
          );
        writer.sendNow(options.errorFrame(err), { event: "error" });
        finish(() => afterFanOut(() => (writer.end(), resolve())));
      },
      backlog: () => sse?.backlog ?? 0,
      flush: () => sse?.flush(),
      opened: () => {
        if (!done) open();
      },
    });
    // The caller went away (before the first item too): stop the stream (the channel lets go of it).
    res.on("close", () => finish(() => (sse?.end(), resolve())));
  });
}

/** A stream as SSE: written frame by frame inside each commit's fan-out when it is live, else through `pipeToSse`. */
export function streamToSse<T>(res: HttpResponse, events: AsyncIterable<T>, options: SsePipeOptions<T>): Promise<void> {
  return isLive(events) ? liveToSse(res, events, options) : pipeToSse(res, events, options);
}
