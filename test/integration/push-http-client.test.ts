import http from "node:http";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { EgressPolicy, ResolvedAddress, Resolver } from "../../src/egress/egress-guard.js";
import { createPushHttpClient, type PushHttpClient } from "../../src/push/push-http-client.js";

// Test-only policy: http:// and loopback targets are allowed, nothing else private.
const LOOPBACK_TEST: EgressPolicy = { allowHttpLoopback: true, allowedPorts: [], allowHosts: [], denyHosts: [] };
const STRICT: EgressPolicy = { ...LOOPBACK_TEST, allowHttpLoopback: false };

interface Hit {
  method: string | undefined;
  url: string | undefined;
  headers: http.IncomingHttpHeaders;
  body: string;
  remotePort: number | undefined;
}

interface Receiver {
  port: number;
  base: string;
  hits: Hit[];
  server: http.Server;
}

const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A webhook receiver on loopback; `handler` runs after the request body has been read and recorded. */
async function receiver(
  handler: (req: http.IncomingMessage, res: http.ServerResponse, hit: Hit) => void,
): Promise<Receiver> {
  const hits: Hit[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const hit: Hit = {
        method: req.method,
        url: req.url,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        remotePort: req.socket.remotePort,
      };
      hits.push(hit);
      handler(req, res, hit);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { port, base: `http://127.0.0.1:${port}`, hits, server };
}

/** A raw TCP "HTTP" server that answers any request with fixed bytes. */
async function rawServer(response: string): Promise<number> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.once("data", () => socket.write(response));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return (server.address() as net.AddressInfo).port;
}

function client(policy: EgressPolicy = LOOPBACK_TEST, resolve?: Resolver): PushHttpClient {
  const c = createPushHttpClient(resolve ? { policy, resolve } : { policy });
  cleanups.push(() => c.close());
  return c;
}

function countingResolver(answers: Record<string, ResolvedAddress[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const answer = answers[hostname];
    if (answer === undefined) throw Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" });
    return answer;
  };
  return Object.assign(fn, { calls });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const SECRET_BEARER = "Bearer eyJ-very-secret-jwt";
const SECRET_TOKEN = "notif-token-s3cr3t";

describe("push HTTP client against loopback receivers", () => {
  it("delivers the exact body and headers to a 200 receiver", async () => {
    const rx = await receiver((_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end("thanks"));
    const body = JSON.stringify({ kind: "task", id: "t-1", status: { state: "completed" }, note: "ünïcödé ✓" });
    const result = await client().post({
      url: `${rx.base}/a2a/hook?tenant=t1#frag`,
      body,
      headers: {
        "Content-Type": "application/json",
        Authorization: SECRET_BEARER,
        "X-A2A-Notification-Token": SECRET_TOKEN,
      },
      timeoutMs: 5_000,
    });

    expect(result).toMatchObject({ ok: true, status: 200, retryable: false });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    expect(rx.hits).toHaveLength(1);
    const hit = rx.hits[0]!;
    expect(hit.method).toBe("POST");
    expect(hit.url).toBe("/a2a/hook?tenant=t1");
    expect(hit.body).toBe(body);
    expect(hit.headers["content-type"]).toBe("application/json");
    expect(hit.headers["authorization"]).toBe(SECRET_BEARER);
    expect(hit.headers["x-a2a-notification-token"]).toBe(SECRET_TOKEN);
    expect(hit.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
    expect(hit.headers["host"]).toBe(`127.0.0.1:${rx.port}`);
    expect(JSON.stringify(result)).not.toContain("secret");
  });

  it("owns Host and connection-level headers (caller values are dropped)", async () => {
    const rx = await receiver((_req, res) => res.writeHead(204).end());
    const result = await client().post({
      url: `${rx.base}/h`,
      body: "{}",
      headers: { Host: "evil.example", "Transfer-Encoding": "chunked", Upgrade: "websocket", "X-Custom": "kept" },
      timeoutMs: 5_000,
    });
    expect(result).toMatchObject({ ok: true, status: 204 });
    const hit = rx.hits[0]!;
    expect(hit.headers["host"]).toBe(`127.0.0.1:${rx.port}`);
    expect(hit.headers["upgrade"]).toBeUndefined();
    expect(hit.headers["transfer-encoding"]).toBeUndefined();
    expect(hit.headers["x-custom"]).toBe("kept");
  });

  it("refuses header values carrying CR/LF (no request is sent)", async () => {
    const rx = await receiver((_req, res) => res.writeHead(200).end());
    const result = await client().post({
      url: `${rx.base}/h`,
      body: "{}",
      headers: { "X-A2A-Notification-Token": `${SECRET_TOKEN}\r\nX-Injected: 1` },
      timeoutMs: 5_000,
    });
    expect(result).toMatchObject({
      ok: false,
      retryable: false,
      error: "invalid push request (a header name or value was rejected)",
    });
    expect(JSON.stringify(result)).not.toContain(SECRET_TOKEN);
    await sleep(50);
    expect(rx.hits).toHaveLength(0);
  });

  it("pins to an IPv6 loopback answer too", async (ctx) => {
    const server = http.createServer((req, res) => res.end(req.headers.host));
    const listening = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(0, "::1", () => resolve(true));
    });
    if (!listening) ctx.skip();
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as net.AddressInfo).port;
    const resolve = countingResolver({ "v6.test": [{ address: "::1", family: 6 }] });
    const c = client(LOOPBACK_TEST, resolve);
    await expect(
      c.post({ url: `http://[::1]:${port}/`, body: "{}", headers: {}, timeoutMs: 5_000 }),
    ).resolves.toMatchObject({ ok: true });
    await expect(
      c.post({ url: `http://v6.test:${port}/`, body: "{}", headers: {}, timeoutMs: 5_000 }),
    ).resolves.toMatchObject({ ok: true });
    expect(resolve.calls).toEqual(["v6.test"]);
  });

  it("refuses a 302 redirect and never follows it", async () => {
    const second = await receiver((_req, res) => res.writeHead(200).end("second"));
    const first = await receiver((_req, res) => res.writeHead(302, { location: `${second.base}/stolen` }).end());
    const result = await client().post({
      url: `${first.base}/hook`,
      body: "{}",
      headers: { Authorization: SECRET_BEARER },
      timeoutMs: 5_000,
    });

    expect(result).toMatchObject({
      ok: false,
      status: 302,
      retryable: false,
      error: "redirect refused (3xx): webhook answered 302",
    });
    await sleep(200);
    expect(first.hits).toHaveLength(1);
    expect(second.hits).toHaveLength(0);
  });

  it.each([301, 303, 307, 308])("refuses a %i redirect", async (status) => {
    const rx = await receiver((_req, res) => res.writeHead(status, { location: "http://127.0.0.1:1/" }).end());
    const result = await client().post({ url: `${rx.base}/`, body: "{}", headers: {}, timeoutMs: 5_000 });
    expect(result).toMatchObject({
      ok: false,
      status,
      retryable: false,
      error: `redirect refused (3xx): webhook answered ${status}`,
    });
  });

  it("times out a receiver that never answers (retryable)", async () => {
    const rx = await receiver(() => {
      /* hold the response open */
    });
    const started = Date.now();
    const result = await client().post({
      url: `${rx.base}/slow`,
      body: "{}",
      headers: { Authorization: SECRET_BEARER },
      timeoutMs: 300,
    });
    const took = Date.now() - started;

    expect(result.ok).toBe(false);
    expect(result.retryable).toBe(true);
    expect(result.status).toBeUndefined();
    expect(result.error).toMatch(/^timeout after 300 ms/);
    expect(took).toBeLessThan(2_000);
    expect(rx.hits).toHaveLength(1);
  });

  it("does not hang on a body that stalls after the status line; the status decides", async () => {
    const rx = await receiver((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("partial…"); // never ended
    });
    const started = Date.now();
    const result = await client().post({ url: `${rx.base}/stall`, body: "{}", headers: {}, timeoutMs: 400 });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(result).toMatchObject({ ok: true, status: 200 });
  });

  it.each<[number, boolean, boolean]>([
    [200, true, false],
    [201, true, false],
    [202, true, false],
    [204, true, false],
    [500, false, true],
    [502, false, true],
    [503, false, true],
    [408, false, true],
    [425, false, true],
    [429, false, true],
    [400, false, false],
    [401, false, false],
    [403, false, false],
    [404, false, false],
    [410, false, false],
    [413, false, false],
  ])("status %i → ok=%s retryable=%s", async (status, ok, retryable) => {
    const rx = await receiver((_req, res) => res.writeHead(status).end(status === 204 ? undefined : "x"));
    const result = await client().post({
      url: `${rx.base}/s`,
      body: "{}",
      headers: { Authorization: SECRET_BEARER },
      timeoutMs: 5_000,
    });
    expect(result).toMatchObject({ ok, status, retryable });
    if (!ok) expect(result.error).toBe(`webhook answered ${status}`);
    expect(JSON.stringify(result)).not.toContain("secret");
  });

  it("caps a huge (endless) response body and does not hang", async () => {
    let written = 0;
    let socketClosed = false;
    const rx = await receiver((req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      req.socket.on("close", () => (socketClosed = true));
      const pump = (): void => {
        while (!res.destroyed && written < 512 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once("drain", pump);
            return;
          }
        }
      };
      res.on("error", () => undefined);
      pump();
    });
    const started = Date.now();
    const result = await client().post({
      url: `${rx.base}/huge`,
      body: "{}",
      headers: {},
      timeoutMs: 10_000,
      maxResponseBytes: 16 * 1024,
    });
    expect(result).toMatchObject({ ok: true, status: 200 });
    expect(Date.now() - started).toBeLessThan(5_000);
    await sleep(100);
    expect(socketClosed).toBe(true);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it("drains small bodies fully so sequential deliveries reuse the pinned keep-alive connection", async () => {
    const rx = await receiver((_req, res) => res.writeHead(200).end("small"));
    const c = client();
    for (let i = 0; i < 3; i += 1) {
      await expect(
        c.post({ url: `${rx.base}/r${i}`, body: `{"i":${i}}`, headers: {}, timeoutMs: 5_000 }),
      ).resolves.toMatchObject({ ok: true });
      await sleep(20); // let undici mark the connection idle before the next dispatch
    }
    expect(rx.hits.map((h) => h.body)).toEqual(['{"i":0}', '{"i":1}', '{"i":2}']);
    expect(new Set(rx.hits.map((h) => h.remotePort)).size).toBe(1);
  });

  it("pins the connection to the checked address and keeps the Host header (one resolver call per delivery)", async () => {
    const rx = await receiver((_req, res) => res.writeHead(200).end());
    const resolve = countingResolver({ "hook.test": [{ address: "127.0.0.1", family: 4 }] });
    const c = client(LOOPBACK_TEST, resolve);
    const url = `http://hook.test:${rx.port}/a2a`;

    await expect(c.post({ url, body: '{"n":1}', headers: {}, timeoutMs: 5_000 })).resolves.toMatchObject({
      ok: true,
      status: 200,
    });
    await expect(c.post({ url, body: '{"n":2}', headers: {}, timeoutMs: 5_000 })).resolves.toMatchObject({
      ok: true,
      status: 200,
    });

    // "hook.test" is a reserved name the OS resolver cannot answer: reaching the server at all
    // proves the socket used our pinned answer, and the resolver was asked once per delivery.
    expect(resolve.calls).toEqual(["hook.test", "hook.test"]);
    expect(rx.hits.map((h) => h.headers["host"])).toEqual([`hook.test:${rx.port}`, `hook.test:${rx.port}`]);
  });

  it("revalidates at delivery time: a name that rebinds to a private address is refused before connecting", async () => {
    const rx = await receiver((_req, res) => res.writeHead(200).end());
    let answer: ResolvedAddress = { address: "127.0.0.1", family: 4 };
    const c = client(LOOPBACK_TEST, async () => [answer]);
    const url = `http://hook.test:${rx.port}/a2a`;

    await expect(c.post({ url, body: "{}", headers: {}, timeoutMs: 5_000 })).resolves.toMatchObject({ ok: true });
    answer = { address: "10.0.0.5", family: 4 };
    const second = await c.post({ url, body: "{}", headers: {}, timeoutMs: 5_000 });
    expect(second.ok).toBe(false);
    expect(second.retryable).toBe(false);
    expect(second.error).toMatch(/^push URL refused by the address arm: hook\.test resolves to 10\.0\.0\.5/);
    expect(rx.hits).toHaveLength(1);
  });

  it("without allowHttpLoopback the same URL is refused before any connection", async () => {
    const rx = await receiver((_req, res) => res.writeHead(200).end());
    const resolve = countingResolver({ "hook.test": [{ address: "127.0.0.1", family: 4 }] });
    const c = client(STRICT, resolve);

    const byName = await c.post({
      url: `http://hook.test:${rx.port}/a2a?token=qs-secret`,
      body: "{}",
      headers: {},
      timeoutMs: 5_000,
    });
    expect(byName).toMatchObject({ ok: false, retryable: false });
    expect(byName.error).toMatch(/^push URL refused by the scheme arm: /);
    expect(byName.error).not.toContain("qs-secret");

    const https = await c.post({ url: `https://hook.test:${rx.port}/a2a`, body: "{}", headers: {}, timeoutMs: 5_000 });
    expect(https).toMatchObject({ ok: false, retryable: false });
    expect(https.error).toMatch(/^push URL refused by the port arm: /);

    const literal = await c.post({ url: `${rx.base}/a2a`, body: "{}", headers: {}, timeoutMs: 5_000 });
    expect(literal.error).toMatch(/^push URL refused by the scheme arm: /);

    await sleep(100);
    expect(rx.hits).toHaveLength(0);
    expect(resolve.calls).toEqual([]);
  });

  it("refuses the conformance URLs and metadata targets without connecting", async () => {
    const c = client(LOOPBACK_TEST);
    for (const [url, arm] of [
      ["https://10.0.0.5/push", "address"],
      ["http://10.0.0.5/push", "scheme"],
      ["http://169.254.169.254/latest/meta-data/", "scheme"],
      ["https://169.254.169.254/latest/meta-data/", "address"],
      ["https://metadata.google.internal/computeMetadata/v1/", "address"],
    ] as const) {
      const result = await c.post({ url, body: "{}", headers: {}, timeoutMs: 1_000 });
      expect(result.ok).toBe(false);
      expect(result.retryable).toBe(false);
      expect(result.error).toMatch(new RegExp(`^push URL refused by the ${arm} arm: `));
    }
  });

  it("an unresolvable name is a retryable failure", async () => {
    const c = client(LOOPBACK_TEST, countingResolver({}));
    const result = await c.post({ url: "https://nxdomain.example.com/", body: "{}", headers: {}, timeoutMs: 1_000 });
    expect(result).toMatchObject({
      ok: false,
      retryable: true,
      error: "push URL host nxdomain.example.com could not be resolved (ENOTFOUND)",
    });
  });

  it("a resolver slower than the attempt timeout is a retryable timeout", async () => {
    const c = client(LOOPBACK_TEST, () => new Promise(() => undefined));
    const result = await c.post({ url: "https://slow-dns.example.com/", body: "{}", headers: {}, timeoutMs: 200 });
    expect(result).toMatchObject({ ok: false, retryable: true });
    expect(result.error).toMatch(/^timeout after 200 ms/);
  });

  it("a refused connection is retryable", async () => {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const result = await client().post({ url: `http://127.0.0.1:${port}/`, body: "{}", headers: {}, timeoutMs: 2_000 });
    expect(result).toMatchObject({ ok: false, retryable: true, error: "connection error (ECONNREFUSED)" });
  });

  it.each([
    [
      "101 Switching Protocols",
      "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    ],
    [
      "200 with Connection: upgrade",
      "HTTP/1.1 200 OK\r\nConnection: upgrade\r\nUpgrade: h2c\r\nContent-Length: 0\r\n\r\n",
    ],
    [
      "204 with Connection: keep-alive, Upgrade",
      "HTTP/1.1 204 No Content\r\nConnection: keep-alive, Upgrade\r\nUpgrade: h2c\r\n\r\n",
    ],
  ])("refuses a %s answer", async (_label, raw) => {
    const port = await rawServer(raw);
    const result = await client().post({ url: `http://127.0.0.1:${port}/`, body: "{}", headers: {}, timeoutMs: 2_000 });
    expect(result).toMatchObject({
      ok: false,
      retryable: false,
      error: "webhook answered with Connection: upgrade (refused)",
    });
  });

  it("close() waits for in-flight posts and later posts are refused", async () => {
    const rx = await receiver((_req, res) => setTimeout(() => res.writeHead(200).end(), 150));
    const c = createPushHttpClient({ policy: LOOPBACK_TEST });
    const pending = c.post({ url: `${rx.base}/`, body: "{}", headers: {}, timeoutMs: 5_000 });
    await sleep(20);
    await c.close();
    await expect(pending).resolves.toMatchObject({ ok: true, status: 200 });
    await expect(c.post({ url: `${rx.base}/`, body: "{}", headers: {}, timeoutMs: 5_000 })).resolves.toMatchObject({
      ok: false,
      error: "push client closed",
    });
  });
});
