// SSE subscribers for the stream figures: many JSON-RPC `tasks/resubscribe` streams held open at once, each
// noting the wall-clock time it received each event (comparable with the server's commit times: same clock).
// Each stream is a plain TCP socket speaking HTTP/1.1 by hand: the figure is the server's latency, so the
// subscribers must cost as little as possible. With undici's body iterator, reading one event cost this
// process about 30 µs, so 1 000 streams on the shared cores added some 30 ms of the client's own work to the
// slowest receipt; a 'data' handler scanning for the blank line that ends an SSE event costs a few µs.
import { connect, type Socket } from "node:net";
import { wallNow } from "../lib/ipc.js";

interface Stream {
  receipts: number[];
  socket: Socket;
}

const streams: Stream[] = [];

function openOne(baseUrl: string, taskId: string): Promise<void> {
  const url = new URL(baseUrl);
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/resubscribe", params: { id: taskId } });
  return new Promise<void>((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), noDelay: true });
    const stream: Stream = { receipts: [], socket };
    let head = true;
    let buffered = "";
    socket.setEncoding("latin1");
    socket.on("error", reject);
    socket.on("connect", () =>
      socket.write(
        `POST /a2a/jsonrpc HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\naccept: text/event-stream\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      ),
    );
    socket.on("data", (chunk: string) => {
      const at = wallNow();
      buffered += chunk;
      if (head) {
        const end = buffered.indexOf("\r\n\r\n");
        if (end < 0) return;
        const status = /^HTTP\/1\.1 (\d{3})/.exec(buffered)?.[1];
        if (status !== "200") {
          socket.destroy();
          reject(new Error(`resubscribe answered HTTP ${status ?? "?"}`));
          return;
        }
        head = false;
        buffered = buffered.slice(end + 4);
      }
      // One SSE event ends with a blank line; the chunked framing around it (CRLFs) never makes one.
      let end: number;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        buffered = buffered.slice(end + 2);
        if (stream.receipts.push(at) === 1) {
          streams.push(stream);
          resolve();
        }
      }
    });
  });
}

/** Opens `count` more streams on one task, `batch` at a time; resolves once each got its first event. */
export async function openStreams(args: {
  baseUrl: string;
  taskId: string;
  count: number;
  batch: number;
}): Promise<{ open: number }> {
  for (let done = 0; done < args.count; done += args.batch) {
    await Promise.all(
      Array.from({ length: Math.min(args.batch, args.count - done) }, () => openOne(args.baseUrl, args.taskId)),
    );
  }
  return { open: streams.length };
}

/** The receipt times (wall-clock ms) of the first `limit` streams. */
export function streamReceipts(args: { limit: number }): number[][] {
  return streams.slice(0, args.limit).map((s) => s.receipts);
}

export function closeStreams(): { closed: number } {
  const closed = streams.length;
  for (const s of streams.splice(0)) s.socket.destroy();
  return { closed };
}
