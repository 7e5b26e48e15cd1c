// Trust under attack and faults, items 5.2–5.6: unknown gRPC/Connect methods answer UNIMPLEMENTED in their
// own protocol; a caller that resets its connection is logged at debug, not error; a JSON-RPC error carries
// the request id whenever it could be read (401 too); an unknown URL is ROUTE_NOT_FOUND, not TASK_NOT_FOUND;
// one trailing slash on a known route is ignored. Each hostile request leaves the server up and changes nothing.
import { randomUUID } from "node:crypto";
import { connect as h2connect, constants as h2 } from "node:http2";
import { connect as netConnect } from "node:net";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import { freePort, TEST_BUILTIN_WORKFLOWS } from "../support/server-process.js";
import { grpcFrame } from "../support/grpc-frame.js";

type Obj = Record<string, any>;

class CountingStore extends MemoryTaskStore {
  created = 0;
  override async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    this.created++;
    return super.create(record, events);
  }
}

const KEY = "trust-key-0123456789abcdef";
const SCOPES = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];

describe("trust under attack and faults", () => {
  let app: App;
  let baseUrl: string;
  let port: number;
  const store = new CountingStore();
  const logLines: Obj[] = [];
  const auth = { authorization: `Bearer ${KEY}` };
  const v10 = { "A2A-Version": "1.0" };

  beforeAll(async () => {
    port = await freePort();
    const config = loadConfig({
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "debug",
      SHUTDOWN_GRACE_MS: "1000",
      BUILTIN_WORKFLOWS: TEST_BUILTIN_WORKFLOWS,
      API_KEYS: JSON.stringify([{ id: "trust", tenant: "acme", scopes: SCOPES, key: KEY }]),
    });
    // Every log line, parsed: the reset tests read their levels.
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split("\n")) if (line.trim()) logLines.push(JSON.parse(line) as Obj);
        done();
      },
    });
    app = await createApp({ config, logger: createLogger(config.logLevel, sink), store, durableStore: false });
    await app.listen();
    baseUrl = `http://127.0.0.1:${port}`;
  });
  afterAll(() => app?.close());

  const post = (path: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
    fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth, ...headers },
      body,
    });
  async function stillUp(): Promise<void> {
    expect((await fetch(`${baseUrl}/.well-known/agent-card.json`)).status).toBe(200);
    const task = await post(
      "/a2a/jsonrpc",
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "none" } }),
    );
    expect(((await task.json()) as Obj)["error"]["code"]).toBe(-32001);
  }

  /** One gRPC call over h2c with raw frame bytes: its HTTP status, grpc-status and grpc-message (headers or trailers). */
  async function grpcCall(path: string, body: Buffer, headers: Record<string, string> = {}) {
    const session = h2connect(baseUrl);
    try {
      return await new Promise<{ http?: number; status?: string; message: string }>((resolve, reject) => {
        const req = session.request({
          ":method": "POST",
          ":path": path,
          "content-type": "application/grpc",
          te: "trailers",
          ...auth,
          ...headers,
        });
        let head: Obj = {};
        let trailers: Obj = {};
        req.on("response", (h) => (head = h));
        req.on("trailers", (h) => (trailers = h));
        req.on("error", reject);
        req.resume();
        req.on("close", () =>
          resolve({
            http: head[":status"],
            status: head["grpc-status"] ?? trailers["grpc-status"],
            message: decodeURIComponent(String(head["grpc-message"] ?? trailers["grpc-message"] ?? "")),
          }),
        );
        req.end(body);
      });
    } finally {
      session.close();
    }
  }

  describe("5.2 unknown gRPC and Connect methods are UNIMPLEMENTED in their own protocol", () => {
    it("gRPC (+proto and +json): grpc-status 12 with a grpc-message, for unknown methods of our services and unknown services", async () => {
      const before = store.created;
      for (const path of [
        "/a2a.v1.A2AService/Nope",
        "/lf.a2a.v1.A2AService/Nope",
        "/unknown.Service/Method",
        "/grpc.health.v1.Health/Nope",
      ]) {
        for (const type of ["application/grpc", "application/grpc+json"]) {
          const answer = await grpcCall(path, grpcFrame(new Uint8Array()), { "content-type": type });
          expect(answer.http, path).toBe(200);
          expect(answer.status, `${path} ${type}`).toBe("12");
          expect(answer.message).toContain(path);
        }
      }
      expect(store.created).toBe(before);
      await stillUp();
    });

    it("gRPC-Web: a trailer frame with grpc-status 12", async () => {
      for (const path of ["/lf.a2a.v1.A2AService/Nope", "/unknown.Service/Method"]) {
        const res = await post(path, grpcFrame(new Uint8Array()), { "content-type": "application/grpc-web+proto" });
        expect(res.status).toBe(200);
        const bytes = Buffer.from(await res.arrayBuffer());
        expect(bytes[0]).toBe(0x80);
        expect(bytes.subarray(5).toString()).toMatch(/grpc-status: ?12\b/);
      }
    });

    it("Connect unary: HTTP 404 with a Connect error body `unimplemented`; Connect streaming: an end-stream message", async () => {
      for (const [path, type] of [
        ["/a2a.v1.A2AService/Nope", "application/json"],
        ["/lf.a2a.v1.A2AService/Nope", "application/proto"],
        ["/unknown.Service/Method", "application/json"],
      ] as const) {
        const res = await post(path, "{}", { "content-type": type });
        expect(res.status, path).toBe(404);
        const body = (await res.json()) as Obj;
        expect(body["code"]).toBe("unimplemented");
        expect(body["message"]).toContain(path);
      }
      // The 1.0 service's errors carry its ErrorInfo.
      const v10Unary = (await (await post("/lf.a2a.v1.A2AService/Nope", "{}")).json()) as Obj;
      expect(v10Unary["details"]?.[0]?.["debug"]?.["reason"]).toBe("METHOD_NOT_FOUND");
      const stream = await post("/lf.a2a.v1.A2AService/Nope", grpcFrame(Buffer.from("{}")), {
        "content-type": "application/connect+json",
      });
      expect(stream.status).toBe(200);
      const bytes = Buffer.from(await stream.arrayBuffer());
      expect(bytes[0]).toBe(0b10);
      expect((JSON.parse(bytes.subarray(5).toString()) as Obj)["error"]["code"]).toBe("unimplemented");
      // Plain HTTP requests to unknown paths are still HTTP 404s, not RPC answers.
      expect((await fetch(`${baseUrl}/nope.json`, { headers: auth })).status).toBe(404);
    });
  });

  describe("5.3 a caller that resets its connection is logged at debug, not error", () => {
    async function waitForLog(since: number, test: (line: Obj) => boolean): Promise<Obj | undefined> {
      for (let i = 0; i < 100; i++) {
        const found = logLines.slice(since).find(test);
        if (found) return found;
        await new Promise((r) => setTimeout(r, 20));
      }
      return undefined;
    }

    /** HTTP/1.1: headers and half the declared body, then a TCP reset (RST) while the server reads it. */
    async function resetMidBody(path: string, headers: Record<string, string>): Promise<void> {
      const socket = netConnect(port, "127.0.0.1");
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      const head = Object.entries({
        host: `127.0.0.1:${port}`,
        "content-length": "4000",
        authorization: auth.authorization,
        ...headers,
      })
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("");
      socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n{"jsonrpc":"2.0","id":1,`);
      await new Promise((r) => setTimeout(r, 100));
      socket.resetAndDestroy();
    }

    it("JSON-RPC, HTTP+JSON, OpenWOP REST and Connect over HTTP/1.1, and a cancelled gRPC stream: no error line", async () => {
      const since = logLines.length;
      const before = store.created;
      await resetMidBody("/a2a/jsonrpc", { "content-type": "application/json" });
      await resetMidBody("/message:send", { "content-type": "application/json", "a2a-version": "1.0" });
      await resetMidBody("/v1/runs", { "content-type": "application/json" });
      await resetMidBody("/lf.a2a.v1.A2AService/SendMessage", {
        "content-type": "application/json",
        "a2a-version": "1.0",
      });
      // gRPC over h2c: the stream is cancelled (RST_STREAM CANCEL) before its message ends.
      const session = h2connect(baseUrl);
      const req = session.request({
        ":method": "POST",
        ":path": "/lf.a2a.v1.A2AService/SendMessage",
        "content-type": "application/grpc",
        te: "trailers",
        "a2a-version": "1.0",
        ...auth,
      });
      req.on("error", () => undefined);
      const header = Buffer.alloc(5);
      header.writeUInt32BE(4000, 1);
      req.write(Buffer.concat([header, Buffer.alloc(100)]));
      await new Promise((r) => setTimeout(r, 100));
      req.close(h2.NGHTTP2_CANCEL);
      await new Promise((r) => setTimeout(r, 100));
      session.destroy();

      // The three readers of whole bodies (JSON-RPC, HTTP+JSON, OpenWOP REST) noticed the reset, and said so
      // at debug level (connect-es ends a reset call quietly, without a log line).
      await waitForLog(
        since,
        () => logLines.slice(since).filter((line) => line["msg"] === "the caller went away").length >= 3,
      );
      await new Promise((r) => setTimeout(r, 200));
      const gone = logLines.slice(since).filter((line) => line["msg"] === "the caller went away");
      expect(gone.map((line) => line["level"])).toEqual([20, 20, 20]);
      const errors = logLines.slice(since).filter((line) => line["level"] >= 50);
      expect(errors, JSON.stringify(errors).slice(0, 500)).toEqual([]);
      expect(store.created).toBe(before);
      await stillUp();
    });
  });

  describe("5.4 a JSON-RPC error carries the request id whenever it could be read", () => {
    const call = async (body: string, headers: Record<string, string> = {}) => {
      const res = await post("/a2a/jsonrpc", body, headers);
      return { status: res.status, body: (await res.json()) as Obj };
    };

    it("401 without or with a wrong key: the request's id (and, for a 1.0 method, the 1.0 error shape)", async () => {
      const before = store.created;
      const send = (id: unknown, method: string) =>
        JSON.stringify({
          jsonrpc: "2.0",
          id,
          method,
          params: { message: { messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "x" }] } },
        });
      for (const headers of [{ authorization: "" }, { authorization: "Bearer wrong-key-0123456789" }]) {
        const v03 = await call(send(42, "message/send"), headers);
        expect(v03.status).toBe(401);
        expect(v03.body).toEqual({ jsonrpc: "2.0", id: 42, error: expect.objectContaining({ code: -32600 }) });
        const v10call = await call(send("req-7", "SendMessage"), { ...headers, ...v10 });
        expect(v10call.status).toBe(401);
        expect(v10call.body["id"]).toBe("req-7");
        expect(v10call.body["error"]["data"][0]["reason"]).toBe("UNAUTHENTICATED");
        // Unreadable: id null.
        const junk = await call("{not json", headers);
        expect(junk.status).toBe(401);
        expect(junk.body["id"]).toBeNull();
      }
      expect(store.created).toBe(before);
      await stillUp();
    });

    it("parse error: null; invalid request, unknown method, unsupported version: the id; too large: null", async () => {
      expect((await call("{oops")).body["id"]).toBeNull();
      const invalid = await call(JSON.stringify({ jsonrpc: "1.0", id: 11, method: "tasks/get" }));
      expect(invalid.body).toMatchObject({ id: 11, error: { code: -32600 } });
      const noMethod = await call(JSON.stringify({ jsonrpc: "2.0", id: "abc", method: "nope/nope", params: {} }));
      expect(noMethod.body).toMatchObject({ id: "abc", error: { code: -32601 } });
      const version = await call(JSON.stringify({ jsonrpc: "2.0", id: 12, method: "GetTask", params: { id: "x" } }), {
        "A2A-Version": "9.9",
      });
      expect(version.body).toMatchObject({ id: 12, error: { code: -32009 } });
      // Over MAX_BODY_BYTES the body is not read at all, so there is no id to echo.
      const big = await call(
        JSON.stringify({ jsonrpc: "2.0", id: 13, method: "tasks/get", params: { id: "x".repeat(1_100_000) } }),
      );
      expect(big.status).toBe(413);
      expect(big.body["id"]).toBeNull();
    });
  });

  describe("5.5 an unknown URL is its own error (ROUTE_NOT_FOUND), not TASK_NOT_FOUND", () => {
    it("1.0 HTTP+JSON, 0.3 HTTP+JSON and OpenWOP REST", async () => {
      const v10res = await fetch(`${baseUrl}/no/such/route`, { headers: { ...auth, ...v10 } });
      expect(v10res.status).toBe(404);
      const v10body = (await v10res.json()) as Obj;
      expect(v10body["error"]).toMatchObject({
        code: 404,
        status: "NOT_FOUND",
        message: "no route for GET /no/such/route",
      });
      expect(v10body["error"]["details"]).toEqual([
        { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "ROUTE_NOT_FOUND", domain: "openwop.dev" },
      ]);
      const v03 = await fetch(`${baseUrl}/v1/no-such-thing`, { headers: { ...auth, "A2A-Version": "0.3" } });
      expect(v03.status).toBe(404);
      expect((await v03.json()) as Obj).toEqual({ code: -32601, message: "no route for GET /v1/no-such-thing" });
      const openwop = await fetch(`${baseUrl}/v1/no-such-thing`, { headers: auth });
      expect(openwop.status).toBe(404);
      expect((await openwop.json()) as Obj).toEqual({
        error: "not_found",
        message: "no route for GET /v1/no-such-thing",
      });
      // Unauthenticated callers learn nothing more than 401 (authentication comes before routing).
      expect((await fetch(`${baseUrl}/no/such/route`, { headers: v10 })).status).toBe(401);
      // A missing task is still TASK_NOT_FOUND.
      const task = (await (
        await fetch(`${baseUrl}/tasks/${randomUUID()}`, { headers: { ...auth, ...v10 } })
      ).json()) as Obj;
      expect(task["error"]["details"][0]["reason"]).toBe("TASK_NOT_FOUND");
    });
  });

  describe("5.6 one trailing slash on a known route is ignored, for every method", () => {
    it("GET and POST with a trailing slash answer as without it; two slashes are an unknown route", async () => {
      const card = await fetch(`${baseUrl}/.well-known/agent-card.json/`);
      expect(card.status).toBe(200);
      expect(((await card.json()) as Obj)["name"]).toBeTruthy();
      const before = store.created;
      const sent = await post(
        "/message:send/",
        JSON.stringify({
          message: {
            messageId: randomUUID(),
            role: "ROLE_USER",
            parts: [{ text: "hi" }],
            metadata: { skillId: "echo" },
          },
        }),
        v10,
      );
      expect(sent.status).toBe(200);
      const taskId = ((await sent.json()) as Obj)["task"]["id"] as string;
      expect(store.created).toBe(before + 1);
      expect((await fetch(`${baseUrl}/tasks/${taskId}/`, { headers: { ...auth, ...v10 } })).status).toBe(200);
      expect((await fetch(`${baseUrl}/v1/tasks/${taskId}/`, { headers: auth })).status).toBe(200);
      const run = await post(
        "/v1/runs/",
        JSON.stringify({ workflowId: "conformance-noop", inputs: { text: "hello" } }),
      );
      expect(run.status).toBe(201);
      const runId = ((await run.json()) as Obj)["runId"] as string;
      expect((await fetch(`${baseUrl}/v1/runs/${runId}/`, { headers: auth })).status).toBe(200);
      const twice = await fetch(`${baseUrl}/v1/runs//`, { headers: auth });
      expect(twice.status).toBe(404);
      expect(((await twice.json()) as Obj)["message"]).toBe("no route for GET /v1/runs//");
    });
  });
});
