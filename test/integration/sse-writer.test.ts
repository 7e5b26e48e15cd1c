// SseWriter's live writes on a real HTTP/1.1 connection: a frame many streams share goes straight to the
// socket as its HTTP chunk, held until the flush; whatever else is written in between (a frame of its own, an
// error event, the end) still reaches the client in the order it was sent, as valid chunked framing.
import { createServer, type Server, type ServerResponse } from "node:http";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { JsonText, SseWriter } from "../../src/transport/http-io.js";

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** Serves one SSE response written by `write`, and answers the raw bytes the client read (head and body). */
async function exchange(write: (sse: SseWriter, res: ServerResponse) => void): Promise<{ head: string; body: string }> {
  server = createServer((_req, res) => write(new SseWriter(res), res));
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () =>
      socket.write(`GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
    );
    let text = "";
    socket.setEncoding("latin1");
    // The writer keeps the connection alive: the body is read up to its last chunk.
    socket.on("data", (chunk: string) => {
      text += chunk;
      if (text.endsWith("\r\n0\r\n\r\n")) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
  });
  const split = raw.indexOf("\r\n\r\n");
  return { head: raw.slice(0, split), body: raw.slice(split + 4) };
}

/** Decodes a chunked body strictly: every size line must match its data, and it must end with the last chunk. */
function dechunk(body: string): string {
  let out = "";
  let at = 0;
  for (;;) {
    const eol = body.indexOf("\r\n", at);
    if (eol < 0) throw new Error(`no chunk size line at ${at}`);
    const size = parseInt(body.slice(at, eol), 16);
    if (Number.isNaN(size)) throw new Error(`bad chunk size ${JSON.stringify(body.slice(at, eol))}`);
    if (size === 0) {
      expect(body.slice(eol)).toBe("\r\n\r\n");
      return out;
    }
    out += body.slice(eol + 2, eol + 2 + size);
    expect(body.slice(eol + 2 + size, eol + 4 + size)).toBe("\r\n");
    at = eol + 4 + size;
  }
}

describe("SseWriter live writes (HTTP/1.1)", () => {
  it("keeps the order of shared frames, frames of its own and an error event, as valid chunks, through end", async () => {
    const { head, body } = await exchange((sse) => {
      sse.sendNow(new JsonText('{"n":1}'));
      sse.sendNow(new JsonText('{"n":2}'));
      sse.sendNow({ n: 3 });
      sse.sendNow(new JsonText('{"n":4}'));
      sse.sendNow(new JsonText('{"n":5}'), { event: "error" });
      sse.sendNow(new JsonText('{"n":6}'));
      sse.end();
    });
    expect(head).toMatch(/transfer-encoding: chunked/i);
    expect(dechunk(body)).toBe(
      'data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n":3}\n\ndata: {"n":4}\n\nevent: error\ndata: {"n":5}\n\ndata: {"n":6}\n\n',
    );
  });

  it("sends held frames after the turn without a flush, and a shared frame's chunk is the same bytes for every stream", async () => {
    const shared = new JsonText('{"shared":true}');
    const { body } = await exchange((sse) => {
      sse.sendNow(shared);
      // Nothing flushes in this turn: the writer's own microtask must, before the end on a later turn.
      setTimeout(() => sse.end(), 20);
    });
    expect(dechunk(body)).toBe('data: {"shared":true}\n\n');
    expect(shared.dataChunk.toString("latin1")).toBe(
      `${shared.dataFrame.length.toString(16)}\r\ndata: {"shared":true}\n\n\r\n`,
    );
  });

  it("a paced write (send, as the keepalive writes) after held frames comes after them", async () => {
    const { body } = await exchange((sse, res) => {
      sse.sendNow(new JsonText('{"n":1}'));
      void sse.send({ n: 2 }).then(() => {
        res.write(": comment\n\n");
        sse.end();
      });
    });
    expect(dechunk(body)).toBe('data: {"n":1}\n\ndata: {"n":2}\n\n: comment\n\n');
  });

  it("counts the shared frames a client does not read as backlog, and clears it once the client reads again", async () => {
    const frame = new JsonText(JSON.stringify({ pad: "x".repeat(64 * 1024) }));
    let writer: SseWriter | undefined;
    const filled = new Promise<{ sent: number; backlog: number }>((resolve) => {
      server = createServer((_req, res) => {
        const sse = (writer = new SseWriter(res));
        // Until the socket takes no more (the client is not reading): at most 64 MB.
        let sent = 0;
        while (sse.backlog === 0 && sent < 1024) {
          sse.sendNow(frame);
          sse.flush();
          sent++;
        }
        resolve({ sent, backlog: sse.backlog });
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const socket = connect((server!.address() as { port: number }).port, "127.0.0.1", () =>
      socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
    );
    socket.pause();
    try {
      const { sent, backlog } = await filled;
      expect(sent).toBeLessThan(1024);
      expect(backlog).toBe(1);
      // One more frame while behind: the backlog counts it too.
      writer!.sendNow(frame);
      writer!.flush();
      expect(writer!.backlog).toBe(2);
      socket.on("data", () => {});
      socket.resume();
      for (let i = 0; i < 500 && writer!.backlog > 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(writer!.backlog).toBe(0);
    } finally {
      socket.destroy();
    }
  });
});
