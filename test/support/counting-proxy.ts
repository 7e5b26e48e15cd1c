import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback HTTP proxy in front of a peer host that counts the JSON-RPC methods it carries (GetTask,
 * SubscribeToTask…, and `SubscribeToTask refused` for a subscription answered without a stream) and every other
 * request by `METHOD path`. Responses (streams too) are piped through as they
 * come. Give the peer host this proxy's URL as PUBLIC_URL so its card sends callers here.
 */
export interface CountingProxy {
  url: string;
  port: number;
  /** Calls seen so far, by JSON-RPC method or `METHOD path`. */
  counts(): Record<string, number>;
  /** Calls of one JSON-RPC method (or `METHOD path`) since the start or the last `reset`. */
  count(method: string): number;
  reset(): void;
  /** Points the proxy at another port (the peer restarted elsewhere). */
  retarget(port: number): void;
  close(): Promise<void>;
}

export async function startCountingProxy(targetPort: number, port = 0): Promise<CountingProxy> {
  let target = targetPort;
  let counts: Record<string, number> = {};
  const bump = (name: string) => (counts[name] = (counts[name] ?? 0) + 1);
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      let name = `${req.method} ${(req.url ?? "").split("?")[0]}`;
      if (req.method === "POST" && (req.url ?? "").startsWith("/a2a/jsonrpc")) {
        try {
          name = String((JSON.parse(body.toString("utf8")) as { method?: unknown }).method);
        } catch {
          // counted by path
        }
      }
      bump(name);
      const upstream = request(
        {
          host: "127.0.0.1",
          port: target,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: `127.0.0.1:${target}` },
        },
        (answer) => {
          // A stream the peer refused (a 1.0 SubscribeToTask of a task that already ended) answers plain JSON.
          if (
            name === "SubscribeToTask" &&
            !String(answer.headers["content-type"] ?? "").startsWith("text/event-stream")
          )
            bump("SubscribeToTask refused");
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          // The peer died mid-response: the caller's connection breaks too (as it would without the proxy).
          answer.on("aborted", () => res.destroy());
          answer.on("error", () => res.destroy());
        },
      );
      upstream.on("error", () => {
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      });
      res.on("close", () => upstream.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}`,
    port: actual,
    counts: () => ({ ...counts }),
    count: (method) => counts[method] ?? 0,
    reset: () => (counts = {}),
    retarget: (p) => (target = p),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
