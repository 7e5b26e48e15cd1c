// SSE subscribers for the stream figures: many JSON-RPC `tasks/resubscribe` streams held open at once, each
// noting the wall-clock time it received each event (comparable with the server's commit times: same clock).
import { Pool } from "undici";
import { wallNow } from "../lib/ipc.js";

interface Stream {
  receipts: number[];
  abort: AbortController;
}

const streams: Stream[] = [];
let pool: Pool | undefined;

async function openOne(baseUrl: string, taskId: string): Promise<void> {
  pool ??= new Pool(baseUrl, { connections: null, pipelining: 1, bodyTimeout: 0, headersTimeout: 60_000 });
  const stream: Stream = { receipts: [], abort: new AbortController() };
  const res = await pool.request({
    path: "/a2a/jsonrpc",
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/resubscribe", params: { id: taskId } }),
    signal: stream.abort.signal,
  });
  if (res.statusCode !== 200) throw new Error(`resubscribe answered HTTP ${res.statusCode}`);
  streams.push(stream);
  let gotFirst: () => void = () => {};
  const first = new Promise<void>((resolve) => (gotFirst = resolve));
  let buffered = "";
  void (async () => {
    try {
      for await (const chunk of res.body) {
        const at = wallNow();
        buffered += (chunk as Buffer).toString();
        // One SSE event ends with a blank line.
        let end: number;
        while ((end = buffered.indexOf("\n\n")) >= 0) {
          buffered = buffered.slice(end + 2);
          stream.receipts.push(at);
          gotFirst();
        }
      }
    } catch {
      // Aborted by closeStreams.
    }
  })();
  await first;
}

/** Opens `count` more streams on one task, `batch` at a time; resolves once each got its first event. */
export async function openStreams(args: { baseUrl: string; taskId: string; count: number; batch: number }): Promise<{ open: number }> {
  for (let done = 0; done < args.count; done += args.batch) {
    await Promise.all(Array.from({ length: Math.min(args.batch, args.count - done) }, () => openOne(args.baseUrl, args.taskId)));
  }
  return { open: streams.length };
}

/** The receipt times (wall-clock ms) of the first `limit` streams. */
export function streamReceipts(args: { limit: number }): number[][] {
  return streams.slice(0, args.limit).map((s) => s.receipts);
}

export async function closeStreams(): Promise<{ closed: number }> {
  const closed = streams.length;
  for (const s of streams.splice(0)) s.abort.abort();
  await pool?.close().catch(() => {});
  pool = undefined;
  return { closed };
}
