import { connect, type Socket } from "node:net";

/** One HTTP/1.1 response as read off a raw socket. */
export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * A raw keep-alive HTTP/1.1 connection: requests go out exactly as written (no client-side pooling or
 * retries), responses are parsed off the one socket in order. What a load balancer or a reused fetch
 * connection does, without any client library deciding for us when to open a new connection.
 */
export class RawHttp1 {
  private buffered = Buffer.alloc(0);
  private wake: (() => void) | undefined;
  private ended = false;
  readonly closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.wake?.();
    });
    socket.on("error", () => {});
    this.closed = new Promise((resolve) =>
      socket.once("close", () => {
        this.ended = true;
        this.wake?.();
        resolve();
      }),
    );
  }

  static open(port: number): Promise<RawHttp1> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host: "127.0.0.1" });
      socket.once("error", reject);
      socket.once("connect", () => {
        socket.off("error", reject);
        resolve(new RawHttp1(socket));
      });
    });
  }

  /** Writes a request; `body` goes with a Content-Length unless `chunked`, then as one chunk and the last chunk. */
  send(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: Uint8Array = new Uint8Array(),
    chunked = false,
  ): void {
    const lines = [
      `${method} ${path} HTTP/1.1`,
      "Host: 127.0.0.1",
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    lines.push(chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${body.byteLength}`);
    this.socket.write(lines.join("\r\n") + "\r\n\r\n");
    if (!chunked) {
      if (body.byteLength > 0) this.socket.write(body);
      return;
    }
    if (body.byteLength > 0)
      this.socket.write(Buffer.concat([Buffer.from(`${body.byteLength.toString(16)}\r\n`), body, Buffer.from("\r\n")]));
    this.socket.write("0\r\n\r\n");
  }

  /** The next response, or undefined when the socket closes before one is complete. */
  async response(): Promise<RawResponse | undefined> {
    for (;;) {
      const parsed = this.parse();
      if (parsed) return parsed;
      if (this.ended) return undefined;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  close(): void {
    this.socket.destroy();
  }

  private parse(): RawResponse | undefined {
    const headEnd = this.buffered.indexOf("\r\n\r\n");
    if (headEnd < 0) return undefined;
    const [statusLine, ...lines] = this.buffered.subarray(0, headEnd).toString("latin1").split("\r\n");
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine!)?.[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let offset = headEnd + 4;
    let body: Buffer;
    if (headers["transfer-encoding"]?.includes("chunked")) {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = this.buffered.indexOf("\r\n", offset);
        if (lineEnd < 0) return undefined;
        const size = parseInt(this.buffered.subarray(offset, lineEnd).toString("latin1"), 16);
        if (this.buffered.length < lineEnd + 2 + size + 2) return undefined;
        parts.push(this.buffered.subarray(lineEnd + 2, lineEnd + 2 + size));
        offset = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers["content-length"] ?? 0);
      if (this.buffered.length < offset + length) return undefined;
      body = this.buffered.subarray(offset, offset + length);
      offset += length;
    }
    this.buffered = this.buffered.subarray(offset);
    return { status, headers, body: Buffer.from(body) };
  }
}
