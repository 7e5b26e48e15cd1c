import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { DomainError } from "../domain/errors.js";

/** HTTP/1.1 and h2c requests share one handler through Node's compatibility API. */
export type HttpRequest = IncomingMessage | Http2ServerRequest;
export type HttpResponse = ServerResponse | Http2ServerResponse;

/**
 * Reads the whole body, refusing more than `limit` bytes before buffering it (the request is destroyed then).
 * Events rather than `for await`: the async iterator cost more than the rest of reading a small body.
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
      req.destroy();
    };
    const onEnd = (): void => settle(null);
    const onClose = (): void => settle(Object.assign(new Error("the request closed before its body ended"), { code: "ERR_STREAM_PREMATURE_CLOSE" }));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", settle);
    req.on("close", onClose);
  });
}

function tooLarge(limit: number): DomainError {
  return new DomainError("payload-too-large", `the request body is larger than the limit of ${limit} bytes`, { limitBytes: limit });
}

export function mediaTypeOf(req: HttpRequest): string {
  return String(req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
}

export function sendJson(res: HttpResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  (res as ServerResponse).writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A value already serialized: SSE writes its text as the `data:`. */
export class JsonText {
  constructor(readonly text: string) {}
}

const jsonOnce = new WeakMap<object, string>();

/**
 * JSON of a value that many streams send (the same encoded update, see `a2a/task-service.ts`), serialized
 * once. The value must not change after it was sent.
 */
export function sharedJson(value: unknown): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value) ?? "null";
  let text = jsonOnce.get(value);
  if (text === undefined) jsonOnce.set(value, (text = JSON.stringify(value)));
  return text;
}

/** Server-Sent Events on either protocol version; honours back-pressure and sends keepalive comments. */
export class SseWriter {
  private keepalive: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly res: HttpResponse, keepaliveMs = 15_000, headers: Record<string, string> = {}) {
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
    let frame = "";
    if (options.id !== undefined) frame += `id: ${options.id}\n`;
    if (options.event) frame += `event: ${options.event}\n`;
    frame += `data: ${data instanceof JsonText ? data.text : JSON.stringify(data)}\n\n`;
    await this.write(frame);
  }

  end(): void {
    this.stop();
    if (!this.res.writableEnded) this.res.end();
  }

  private stop(): void {
    this.closed = true;
    clearInterval(this.keepalive);
  }

  private async write(frame: string): Promise<void> {
    if (this.closed || this.res.writableEnded) return;
    const res = this.res as ServerResponse;
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
export async function pipeToSse<T>(res: HttpResponse, events: AsyncIterable<T>, options: SsePipeOptions<T>): Promise<void> {
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
