// Connection timeouts and caps on the listening port, over real loopback sockets: silent, partial and idle
// connections are closed; streams and slow-but-progressing uploads are not; connections over the total and
// per-client caps are refused at once while others keep working.
import { randomUUID } from "node:crypto";
import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectH2, type ClientHttp2Session } from "node:http2";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EnvReader } from "../../src/domain/env-settings.js";
import { A2AService, Role, TaskState } from "../../src/gen/a2a/v1/a2a_pb.js";
import { readConnectionSettings } from "../../src/transport/connection-settings.js";
import { readSse, type SseFrame } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const HEADERS_MS = 400;
const SETTINGS_MS = 300;
const IDLE_MS = 500;
/** Node closes an idle HTTP/1.1 keep-alive connection one second after the advertised timeout. */
const HTTP1_IDLE_CLOSE_MS = IDLE_MS + 1_000;
const H2_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/** Measured figures, printed once at the end. */
const measured: Record<string, number> = {};
afterAll(() => console.log("connection-limits measured:", JSON.stringify(measured)));

interface Raw {
  socket: Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves with ms from connect to close. */
  closed: Promise<number>;
}

function raw(port: number, localAddress = "127.0.0.1"): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let text = "";
    const socket = connectTcp({ port, host: "127.0.0.1", localAddress });
    const closed = new Promise<number>((done) => socket.on("close", () => done(Date.now() - started)));
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
    socket.on("error", () => {});
    socket.once("connect", () => resolve({ socket, received: () => text, closed }));
    socket.once("error", reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The promise's value, or "open" if it has not settled within `ms`. */
const within = <T>(promise: Promise<T>, ms: number): Promise<T | "open"> =>
  Promise.race([promise, sleep(ms).then(() => "open" as const)]);

describe("connection timeouts (short ones configured)", () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      HTTP2_SETTINGS_TIMEOUT_MS: String(SETTINGS_MS),
      HTTP_IDLE_TIMEOUT_MS: String(IDLE_MS),
    });
  });
  afterAll(() => t?.close());

  it("closes a socket that sends nothing after the header timeout", async () => {
    const c = await raw(t.port);
    const ms = await c.closed;
    measured["silent closed after"] = ms;
    expect(ms).toBeGreaterThanOrEqual(HEADERS_MS - 20);
    expect(ms).toBeLessThan(HEADERS_MS + 300);
  });

  it('closes a socket that sends only "PO"', async () => {
    const c = await raw(t.port);
    c.socket.write("PO");
    const ms = await c.closed;
    measured["PO closed after"] = ms;
    expect(ms).toBeGreaterThanOrEqual(HEADERS_MS - 20);
    expect(ms).toBeLessThan(HEADERS_MS + 300);
  });

  it("closes an HTTP/1.1 request head still incomplete at the deadline, however it trickles in", async () => {
    const c = await raw(t.port);
    c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    const trickle = setInterval(() => c.socket.writable && c.socket.write("X-Slow: 1\r\n"), 50);
    const ms = await c.closed;
    clearInterval(trickle);
    measured["trickled head closed after"] = ms;
    expect(ms).toBeLessThan(HEADERS_MS + 300);
    expect(c.received()).toBe("");
  });

  it("closes an h2c connection that sends only the preface (no SETTINGS) after the SETTINGS timeout", async () => {
    const c = await raw(t.port);
    c.socket.write(H2_PREFACE);
    const ms = await c.closed;
    measured["h2 preface only closed after"] = ms;
    expect(ms).toBeGreaterThanOrEqual(SETTINGS_MS - 20);
    expect(ms).toBeLessThan(SETTINGS_MS + 300);
  });

  it("closes an idle HTTP/1.1 keep-alive connection after the idle timeout, not before", async () => {
    const c = await raw(t.port);
    c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    const start = Date.now();
    await expect.poll(() => c.received(), { timeout: 2_000 }).toMatch(/^HTTP\/1\.1 200[\s\S]*\r\n\r\n/);
    expect(c.received().toLowerCase()).toContain(`keep-alive: timeout=${Math.floor(IDLE_MS / 1000)}`);
    // Past the header timeout: an idle connection between requests is not a half-sent head.
    expect(await within(c.closed, HEADERS_MS + 100)).toBe("open");
    await c.closed;
    const idle = Date.now() - start;
    measured["http1 idle keep-alive closed after"] = idle;
    expect(idle).toBeGreaterThanOrEqual(IDLE_MS);
    expect(idle).toBeLessThan(HTTP1_IDLE_CLOSE_MS + 500);
  });

  it("a second request on a keep-alive connection resets the idle timer", async () => {
    const c = await raw(t.port);
    c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await expect.poll(() => (c.received().match(/HTTP\/1\.1 200/g) ?? []).length, { timeout: 2_000 }).toBe(1);
    await sleep(HTTP1_IDLE_CLOSE_MS - 400);
    c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await expect.poll(() => (c.received().match(/HTTP\/1\.1 200/g) ?? []).length, { timeout: 2_000 }).toBe(2);
    // Open past the first request's idle close: the second request started the wait again.
    expect(await within(c.closed, HTTP1_IDLE_CLOSE_MS - 400)).toBe("open");
    c.socket.destroy();
  });

  it("closes a keep-alive connection whose next request head stalls (Node's check: 408)", async () => {
    const c = await raw(t.port);
    c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await expect.poll(() => c.received(), { timeout: 2_000 }).toMatch(/^HTTP\/1\.1 200/);
    const start = Date.now();
    c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    await c.closed;
    measured["stalled second head closed after"] = Date.now() - start;
    expect(Date.now() - start).toBeLessThan(HEADERS_MS + 400);
    expect(c.received()).toContain("HTTP/1.1 408");
  });

  it("completes a slow upload whose body keeps coming past every timeout", async () => {
    const c = await raw(t.port);
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: randomUUID() } });
    const chunks = 25; // one every 100 ms: 2.5 s, past the header, idle and HTTP/1.1 idle-close times
    const padded = " ".repeat(chunks) + body;
    c.socket.write(
      `POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(padded)}\r\n\r\n`,
    );
    const start = Date.now();
    for (let i = 0; i < chunks; i++) {
      c.socket.write(" ");
      await sleep(100);
    }
    c.socket.write(body);
    await expect.poll(() => c.received(), { timeout: 3_000 }).toMatch(/^HTTP\/1\.1 200[\s\S]*"jsonrpc"/);
    measured["slow upload took"] = Date.now() - start;
    expect(Date.now() - start).toBeGreaterThan(HTTP1_IDLE_CLOSE_MS);
    c.socket.destroy();
  });

  it("keeps an SSE stream (tasks/resubscribe on a task waiting for approval) open past every timeout", async () => {
    const endpoint = `${t.baseUrl}/a2a/jsonrpc`;
    const post = (method: string, params: unknown) =>
      fetch(endpoint, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
      });
    const created = (await (
      await post("message/send", {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: "Ship it" }],
          metadata: { skillId: "approval-gate" },
        },
      })
    ).json()) as {
      result: { id: string; status: { state: string } };
    };
    expect(created.result.status.state).toBe("input-required");
    const taskId = created.result.id;
    const opened = Date.now();
    let replied: Promise<Response> | undefined;
    const frames = await readSse(await post("tasks/resubscribe", { id: taskId }), (f: SseFrame) => {
      const result = (f.data as { result: Record<string, any> }).result;
      if (!replied && result["kind"] === "task") {
        // Quiet for longer than every timeout (no keepalive is due within it), then the reply ends the task.
        replied = sleep(HTTP1_IDLE_CLOSE_MS + 1_000).then(() =>
          post("message/send", {
            message: {
              kind: "message",
              messageId: randomUUID(),
              role: "user",
              taskId,
              parts: [{ kind: "data", data: { action: "accept" } }],
            },
          }),
        );
      }
    });
    measured["SSE stream open for"] = Date.now() - opened;
    expect(Date.now() - opened).toBeGreaterThan(HTTP1_IDLE_CLOSE_MS + 1_000);
    expect((await replied!).status).toBe(200);
    expect((frames.at(-1)!.data as { result: Record<string, any> }).result).toMatchObject({
      final: true,
      status: { state: "completed" },
    });
  });

  it("keeps a gRPC server stream (h2c, connect-node) open past every timeout", async () => {
    const client = createClient(A2AService, createGrpcTransport({ baseUrl: t.baseUrl }));
    const waiting = await client.sendMessage({
      request: {
        messageId: randomUUID(),
        role: Role.USER,
        content: [{ part: { case: "text", value: "Ship it" } }],
        metadata: { skillId: "approval-gate" },
      },
    });
    const taskId = waiting.payload.case === "task" ? waiting.payload.value.id : "";
    expect(waiting.payload.case === "task" && waiting.payload.value.status?.state).toBe(TaskState.INPUT_REQUIRED);
    const opened = Date.now();
    const states: number[] = [];
    let replied: Promise<unknown> | undefined;
    for await (const event of client.taskSubscription({ name: `tasks/${taskId}` })) {
      const state =
        event.payload.case === "task" || event.payload.case === "statusUpdate"
          ? event.payload.value.status?.state
          : undefined;
      if (state !== undefined) states.push(state);
      if (!replied && state === TaskState.INPUT_REQUIRED) {
        replied = sleep(IDLE_MS + SETTINGS_MS + HEADERS_MS + 500).then(() =>
          client.sendMessage({
            request: {
              messageId: randomUUID(),
              role: Role.USER,
              taskId,
              content: [{ part: { case: "data", value: { data: { action: "accept" } } } }],
            },
          }),
        );
      }
    }
    await replied;
    measured["gRPC stream open for"] = Date.now() - opened;
    expect(Date.now() - opened).toBeGreaterThan(IDLE_MS + SETTINGS_MS + HEADERS_MS);
    expect(states.at(-1)).toBe(TaskState.COMPLETED);
  });

  it("closes an HTTP/2 session with no open stream after the idle timeout (GOAWAY)", async () => {
    const session: ClientHttp2Session = connectH2(t.baseUrl);
    const goaway = new Promise<void>((resolve) => session.once("goaway", () => resolve()));
    const closed = new Promise<number>((resolve) => session.once("close", () => resolve(Date.now())));
    session.on("error", () => {});
    const status = await new Promise<number>((resolve, reject) => {
      const req = session.request({ ":path": "/healthz" });
      req.on("response", (headers) => resolve(Number(headers[":status"])));
      req.on("error", reject);
      req.resume();
      req.end();
    });
    expect(status).toBe(200);
    const idleFrom = Date.now();
    await goaway;
    const at = await closed;
    measured["h2 idle session closed after"] = at - idleFrom;
    expect(at - idleFrom).toBeGreaterThanOrEqual(IDLE_MS - 50);
    expect(at - idleFrom).toBeLessThan(IDLE_MS + 500);
  });

  it("counts what each timeout closed", async () => {
    const text = await (await fetch(`${t.baseUrl}/metrics`, { headers: { connection: "close" } })).text();
    const count = (reason: string, protocol: string) =>
      Number(
        new RegExp(
          `^openwop_connections_timed_out_total\\{(?=[^}]*reason="${reason}")(?=[^}]*protocol="${protocol}")[^}]*\\} (\\d+)`,
          "m",
        ).exec(text)?.[1] ?? 0,
      );
    expect(count("headers", "unknown")).toBeGreaterThanOrEqual(2); // silent, "PO"
    expect(count("headers", "http1")).toBeGreaterThanOrEqual(1); // the trickled head
    expect(count("http2-settings", "h2c")).toBe(1);
    expect(count("idle", "http1")).toBeGreaterThanOrEqual(1);
    expect(count("idle", "h2c")).toBeGreaterThanOrEqual(1);
  });
});

describe("connection settings", () => {
  it("defaults fit a host behind a load balancer; a request timeout shorter than the header timeout is refused", () => {
    expect(EnvReader.load({}, readConnectionSettings)).toEqual({
      headersTimeoutMs: 10_000,
      http2SettingsTimeoutMs: 5_000,
      idleTimeoutMs: 65_000,
      requestTimeoutMs: 300_000,
      maxConnections: 10_000,
      maxConnectionsPerClient: 0,
    });
    expect(() =>
      EnvReader.load({ HTTP_REQUEST_TIMEOUT_MS: "5000", HTTP_IDLE_TIMEOUT_MS: "0" }, readConnectionSettings),
    ).toThrow(/HTTP_IDLE_TIMEOUT_MS[\s\S]*HTTP_REQUEST_TIMEOUT_MS must be 0 or at least HTTP_HEADERS_TIMEOUT_MS/);
    expect(EnvReader.load({ HTTP_REQUEST_TIMEOUT_MS: "0" }, readConnectionSettings).requestTimeoutMs).toBe(0);
  });
});

describe("connection caps", () => {
  let t: TestApp;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    // Default (long) timeouts: the held connections stay open for the whole test.
    t = await startTestApp({ MAX_CONNECTIONS: "4", MAX_CONNECTIONS_PER_CLIENT: "2" });
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await t?.close();
  });

  const hold = async (localAddress: string): Promise<Raw> => {
    const c = await raw(t.port, localAddress);
    sockets.push(c.socket);
    return c;
  };
  const healthz = async (c: Raw): Promise<string> => {
    c.socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await expect.poll(() => c.received(), { timeout: 2_000 }).toMatch(/\r\n\r\n/);
    return c.received().split("\r\n")[0]!;
  };
  const refusedAtOnce = async (c: Raw): Promise<void> => {
    const ms = await within(c.closed, 1_000);
    expect(ms).not.toBe("open");
    expect(c.received()).toBe("");
  };

  it("refuses connections over the per-client and total caps at once; the others keep working; both are counted", async () => {
    // Loopback is 127.0.0.0/8: each local address is another client.
    const a1 = await hold("127.0.0.1");
    const a2 = await hold("127.0.0.1");
    await sleep(50);
    const a3 = await hold("127.0.0.1");
    await refusedAtOnce(a3);
    expect(await healthz(a1)).toBe("HTTP/1.1 200 OK");
    expect(await healthz(await hold("127.0.0.2"))).toBe("HTTP/1.1 200 OK");
    const c1 = await hold("127.0.0.3");
    await sleep(50);
    // Four open: a fifth client is over the total cap.
    let overTotal = 0;
    for (let i = 0; i < 3; i++) {
      const d = await hold("127.0.0.4");
      await refusedAtOnce(d);
      overTotal++;
    }
    expect(await healthz(c1)).toBe("HTTP/1.1 200 OK");
    expect(await healthz(a2)).toBe("HTTP/1.1 200 OK");
    measured["refused over total cap"] = overTotal;
    // Freeing two makes room again, from the client that was over its cap too.
    a1.socket.destroy();
    c1.socket.destroy();
    await Promise.all([a1.closed, c1.closed]);
    await sleep(50);
    expect(await healthz(await hold("127.0.0.1"))).toBe("HTTP/1.1 200 OK");

    const metrics = await healthzMetrics(await hold("127.0.0.5"));
    const refused = (reason: string) =>
      Number(
        new RegExp(`^openwop_connections_refused_total\\{[^}]*reason="${reason}"[^}]*\\} (\\d+)`, "m").exec(
          metrics,
        )?.[1] ?? 0,
      );
    expect(refused("max-connections-per-client")).toBe(1);
    expect(refused("max-connections")).toBe(3);
    expect(metrics).toMatch(/^openwop_connections_open(\{[^}]*\})? [1-9]/m);
    measured["refused per-client (metric)"] = refused("max-connections-per-client");
    measured["refused total (metric)"] = refused("max-connections");
  });

  const healthzMetrics = async (c: Raw): Promise<string> => {
    c.socket.write("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    await c.closed;
    return c.received();
  };
});
