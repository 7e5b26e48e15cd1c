import http from "node:http";
import type { AddressInfo } from "node:net";

export interface PushHit {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: Record<string, any>;
  at: number;
}

export type PushReply = (hit: PushHit, res: http.ServerResponse) => void;

/**
 * A webhook receiver on loopback (the test-only egress allowance lets the host POST to it). It records
 * every request, then answers with `reply` (200 by default). `stop()` and `start(samePort)` simulate a
 * receiver that goes down and comes back.
 */
export class PushReceiver {
  readonly hits: PushHit[] = [];
  reply: PushReply = (_hit, res) => res.writeHead(200).end("ok");
  private server: http.Server | undefined;
  private portNumber = 0;

  get port(): number {
    return this.portNumber;
  }

  url(path = "/hook"): string {
    return `http://127.0.0.1:${this.portNumber}${path}`;
  }

  async start(port = 0): Promise<this> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        let json: Record<string, any> = {};
        try {
          json = JSON.parse(body) as Record<string, any>;
        } catch {
          // recorded as is
        }
        const hit: PushHit = { path: req.url ?? "", headers: req.headers, body, json, at: Date.now() };
        this.hits.push(hit);
        this.reply(hit, res);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    this.server = server;
    this.portNumber = (server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Hits for one task, in arrival order. */
  forTask(taskId: string): PushHit[] {
    return this.hits.filter((h) => h.json["taskId"] === taskId);
  }
}

export async function waitFor<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
