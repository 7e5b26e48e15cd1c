// A store in trouble, seen from every binding: the real app and the real driver on a real database, with a
// TCP proxy (test/support/command-hold-proxy.ts) between them that stalls every command (the server is
// reachable but never answers) or cuts and refuses connections (the server is down). Callers with a deadline
// are answered DEADLINE_EXCEEDED at it; everyone else is answered UNAVAILABLE (503 + Retry-After, JSON-RPC
// Internal error marked retryable) within STORE_TIMEOUT_MS, the operator console included, and every HTTP answer
// of it carries Retry-After (Connect, gRPC-Web, JSON-RPC too); and the same request retried once the store is
// back succeeds and leaves exactly one task.
import http2 from "node:http2";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { connectMongoStore } from "../../src/store/open-store.js";
import type { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { startCommandHoldProxy, type CommandHoldProxy } from "../support/command-hold-proxy.js";
import "../support/mongo.js";
import { freePort } from "../support/server-process.js";
import { TEST_WORKFLOWS_DIR } from "../support/start-server.js";

type Obj = Record<string, any>;

const STORE_TIMEOUT_MS = 4000;
/** How late an answer may come after its deadline or bound. */
const SLACK_MS = 100;
const SKILL = "slow-approval";
const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));

describe(`a stalled or unreachable store, on every binding (${inject("mongoBackend")})`, () => {
  const dbName = `store_trouble_${randomUUID().slice(0, 8)}`;
  let proxy: CommandHoldProxy;
  let app: App;
  let store: MongoTaskStore;
  let direct: MongoClient;
  let db: Db;
  let base: string;
  let grpcClient: Obj;
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  const figures: Record<string, number> = {};

  beforeAll(async () => {
    process.on("warning", onWarning);
    proxy = await startCommandHoldProxy(inject("mongoUri"));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const config = loadConfig({
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: base,
      LOG_LEVEL: "silent",
      TIMER_POLL_MS: "50",
      SHUTDOWN_GRACE_MS: "1000",
      BUILTIN_WORKFLOWS: "none",
      WORKFLOWS_DIR: TEST_WORKFLOWS_DIR,
      STORE_TIMEOUT_MS: String(STORE_TIMEOUT_MS),
    });
    const opened = await connectMongoStore(proxy.uri, dbName);
    store = opened.store;
    app = await createApp({
      config,
      logger: createLogger("silent"),
      store,
      idempotency: opened.idempotency,
      pushConfigs: opened.pushConfigs,
      durableStore: true,
    });
    await app.listen();
    direct = await MongoClient.connect(inject("mongoUri"));
    db = direct.db(dbName);
    const definition = protoLoader.loadSync("a2a/v1/a2a.proto", {
      includeDirs: [protoDir],
      keepCase: false,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const pkg = grpc.loadPackageDefinition(definition) as Obj;
    grpcClient = new pkg["a2a"].v1.A2AService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    process.off("warning", onWarning);
    console.log(`store-trouble figures (ms): ${JSON.stringify(figures)}`);
    proxy?.resume();
    proxy?.accept();
    grpcClient?.close();
    await app?.close();
    await store?.close();
    // Cleanup only: a backend that cannot drop the database still drops its collections.
    await db?.dropDatabase().catch(async () => {
      for (const c of await db.collections()) await c.drop().catch(() => undefined);
    });
    await direct?.close();
    await proxy?.close();
  });

  // ------------------------------------------------------------------ one request per binding

  const msg03 = (messageId: string) => ({
    kind: "message",
    messageId,
    role: "user",
    parts: [{ kind: "text", text: "hi" }],
    metadata: { skillId: SKILL },
  });
  const msg10 = (messageId: string) => ({
    messageId,
    role: "ROLE_USER",
    parts: [{ text: "hi" }],
    metadata: { skillId: SKILL },
  });
  const proto03 = (messageId: string) => ({
    messageId,
    role: "ROLE_USER",
    content: [{ text: "hi" }],
    metadata: { skillId: SKILL },
  });

  interface Answer {
    status: number;
    headers: Headers;
    body: Obj;
  }
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Obj };
  };

  /** Sends `messageId` (the idempotency key of a create) over one binding; the task id on success. */
  type Send = (messageId: string) => Promise<{ answer: Answer | grpc.ServiceError | null; taskId?: string }>;
  const sends: Record<string, Send> = {
    "JSON-RPC 0.3": async (id) => {
      const answer = await post("/a2a/jsonrpc", {
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: { message: msg03(id), configuration: { blocking: false } },
      });
      return { answer, taskId: answer.body["result"]?.id };
    },
    "JSON-RPC 1.0": async (id) => {
      const answer = await post(
        "/a2a/jsonrpc",
        {
          jsonrpc: "2.0",
          id: 1,
          method: "SendMessage",
          params: { message: msg10(id), configuration: { returnImmediately: true } },
        },
        { "A2A-Version": "1.0" },
      );
      return { answer, taskId: answer.body["result"]?.task?.id };
    },
    "HTTP+JSON 0.3": async (id) => {
      const answer = await post("/v1/message:send", { message: proto03(id), configuration: { blocking: false } });
      return { answer, taskId: answer.body["task"]?.id };
    },
    "HTTP+JSON 1.0": async (id) => {
      const answer = await post(
        "/message:send",
        { message: msg10(id), configuration: { returnImmediately: true } },
        { "A2A-Version": "1.0" },
      );
      return { answer, taskId: answer.body["task"]?.id };
    },
    Connect: async (id) => {
      const answer = await post("/a2a.v1.A2AService/SendMessage", {
        message: proto03(id),
        configuration: { blocking: false },
      });
      return { answer, taskId: answer.body["task"]?.id };
    },
    gRPC: (id) =>
      new Promise((resolve) => {
        grpcClient["SendMessage"](
          { request: proto03(id), configuration: { blocking: false } },
          (err: grpc.ServiceError | null, res: Obj) =>
            resolve(err ? { answer: err } : { answer: null, taskId: res["task"]?.id }),
        );
      }),
    "OpenWOP REST": async (key) => {
      const answer = await post("/v1/runs", { workflowId: SKILL, inputs: { text: "hi" } }, { "idempotency-key": key });
      return { answer, taskId: answer.body["runId"] };
    },
  };

  /** The binding's "store unavailable, retry" answer. */
  function expectUnavailable(binding: string, answer: Answer | grpc.ServiceError | null): void {
    if (binding === "gRPC") {
      expect((answer as grpc.ServiceError).code, binding).toBe(grpc.status.UNAVAILABLE);
      return;
    }
    const { status, headers, body } = answer as Answer;
    // Every HTTP answer says when to retry, whatever its status (JSON-RPC's error rides on 200).
    expect(headers.get("retry-after"), binding).toMatch(/^\d+$/);
    if (binding === "JSON-RPC 0.3") {
      expect(body["error"], `${binding}: ${JSON.stringify(body)}`).toMatchObject({
        code: -32603,
        data: { retryable: true },
      });
    } else if (binding === "JSON-RPC 1.0") {
      expect(body["error"], binding).toMatchObject({
        code: -32603,
        data: [{ reason: "UNAVAILABLE", metadata: { retryable: "true" } }],
      });
    } else if (binding === "Connect") {
      expect(status, binding).toBe(503);
      expect(body["code"], binding).toBe("unavailable");
    } else {
      expect(status, binding).toBe(503);
      if (binding === "OpenWOP REST") expect(body["error"]).toBe("unavailable");
    }
  }

  /** The same request, once the store is back: retried until it goes through (the driver reconnects first). */
  async function retryUntilDone(send: Send, key: string): Promise<string> {
    const until = Date.now() + 20_000;
    for (;;) {
      const { taskId } = await send(key);
      if (taskId) return taskId;
      if (Date.now() > until) throw new Error(`still failing after the store came back: ${key}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  const tasksWithId = (taskId: string) => db.collection("tasks").countDocuments({ _id: taskId } as never);

  // ------------------------------------------------------------------ a gRPC call with a raw grpc-timeout

  /** GetTask over gRPC (h2c) with `grpc-timeout` as given: the grpc-status and how long it took. */
  function grpcGetTask(grpcTimeout: string): Promise<{ status: number; ms: number }> {
    const name = Buffer.from(`tasks/${randomUUID()}`);
    const message = Buffer.concat([Buffer.from([0x0a, name.length]), name]);
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), message]);
    frame.writeUInt32BE(message.length, 1);
    const started = Date.now();
    return new Promise((resolve, reject) => {
      const session = http2.connect(base);
      session.on("error", reject);
      const stream = session.request({
        ":method": "POST",
        ":path": "/a2a.v1.A2AService/GetTask",
        "content-type": "application/grpc",
        te: "trailers",
        "grpc-timeout": grpcTimeout,
      });
      let status: number | undefined;
      const done = (headers: http2.IncomingHttpHeaders) => {
        if (headers["grpc-status"] !== undefined) status = Number(headers["grpc-status"]);
      };
      stream.on("response", done);
      stream.on("trailers", done);
      stream.on("data", () => undefined);
      stream.on("end", () => {
        session.close();
        resolve({ status: status ?? -1, ms: Date.now() - started });
      });
      stream.on("error", reject);
      stream.end(frame);
    });
  }

  // ------------------------------------------------------------------ stalled

  it("warm-up: the bindings answer while the store does (first calls open connections and load code paths, which the timings below should not measure)", async () => {
    expect(
      (await post("/a2a.v1.A2AService/GetTask", { name: `tasks/${randomUUID()}` }, { "connect-timeout-ms": "5000" }))
        .body["code"],
    ).toBe("not_found");
    expect((await grpcGetTask("5000m")).status).toBe(grpc.status.NOT_FOUND);
  });

  it("stalled: a Connect call with connect-timeout-ms 2000 answers DEADLINE_EXCEEDED at its deadline, and its retry finds the one task", async () => {
    const messageId = randomUUID();
    proxy.stall();
    const started = Date.now();
    let answer: Answer;
    try {
      answer = await post(
        "/a2a.v1.A2AService/SendMessage",
        { message: proto03(messageId), configuration: { blocking: false } },
        { "connect-timeout-ms": "2000" },
      );
    } finally {
      figures["connectDeadlineAnswerMs"] = Date.now() - started;
      proxy.resume();
    }
    expect(answer.body["code"]).toBe("deadline_exceeded");
    expect(figures["connectDeadlineAnswerMs"]).toBeGreaterThanOrEqual(1990);
    expect(figures["connectDeadlineAnswerMs"]).toBeLessThanOrEqual(2000 + SLACK_MS);
    // The write the caller stopped waiting for was held, not lost: the retry answers the task it made.
    const taskId = await retryUntilDone(sends["Connect"]!, messageId);
    expect(await retryUntilDone(sends["Connect"]!, messageId)).toBe(taskId);
    expect(await tasksWithId(taskId)).toBe(1);
    expect(await db.collection("tasks").countDocuments({})).toBe(1);
  });

  it("stalled: gRPC with grpc-timeout 2000m answers DEADLINE_EXCEEDED at its deadline", async () => {
    proxy.stall();
    try {
      const { status, ms } = await grpcGetTask("2000m");
      figures["grpcDeadlineAnswerMs"] = ms;
      expect(status).toBe(grpc.status.DEADLINE_EXCEEDED);
      expect(ms).toBeGreaterThanOrEqual(1990);
      expect(ms).toBeLessThanOrEqual(2000 + SLACK_MS);
    } finally {
      proxy.resume();
    }
  });

  it("stalled: a huge grpc-timeout (99999999H) raises no TimeoutOverflowWarning and is held to STORE_TIMEOUT_MS (UNAVAILABLE)", async () => {
    proxy.stall();
    try {
      const { status, ms } = await grpcGetTask("99999999H");
      figures["grpcHugeTimeoutAnswerMs"] = ms;
      expect(status).toBe(grpc.status.UNAVAILABLE);
      expect(ms).toBeGreaterThanOrEqual(STORE_TIMEOUT_MS - 10);
      expect(ms).toBeLessThanOrEqual(STORE_TIMEOUT_MS + SLACK_MS);
    } finally {
      proxy.resume();
    }
    expect(warnings.filter((w) => w.name === "TimeoutOverflowWarning")).toEqual([]);
  });

  it("stalled: a JSON-RPC send (no deadline on this binding) answers the retryable error at STORE_TIMEOUT_MS; once the store answers, its retry finds the one task", async () => {
    const messageId = randomUUID();
    proxy.stall();
    const started = Date.now();
    let answer: Awaited<ReturnType<Send>>["answer"];
    try {
      ({ answer } = await sends["JSON-RPC 0.3"]!(messageId));
    } finally {
      figures["jsonRpcStalledAnswerMs"] = Date.now() - started;
      proxy.resume();
    }
    expectUnavailable("JSON-RPC 0.3", answer);
    expect(figures["jsonRpcStalledAnswerMs"]).toBeLessThanOrEqual(STORE_TIMEOUT_MS + SLACK_MS);
    const taskId = await retryUntilDone(sends["JSON-RPC 0.3"]!, messageId);
    expect(await retryUntilDone(sends["JSON-RPC 0.3"]!, messageId)).toBe(taskId);
    expect(await tasksWithId(taskId)).toBe(1);
  });

  // ------------------------------------------------------------------ the console, and Retry-After on every binding

  /** A GET or POST with no deadline header: status, headers, body (JSON when it is JSON) and how long it took. */
  const timed = async (
    method: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string>; raw?: Uint8Array } = {},
  ) => {
    const started = Date.now();
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : init.raw ? { body: init.raw } : {}),
    });
    const bytes = new Uint8Array(await res.arrayBuffer());
    const ms = Date.now() - started;
    const text = Buffer.from(bytes).toString("latin1");
    return {
      status: res.status,
      headers: res.headers,
      ms,
      text,
      body: res.headers.get("content-type")?.includes("json") ? (JSON.parse(text) as Obj) : undefined,
    };
  };

  /** A 0.3 GetTask request (`name: tasks/<id>`) in one gRPC-Web frame. */
  const grpcWebGetTask = (taskId: string): Uint8Array => {
    const name = Buffer.from(`tasks/${taskId}`);
    const message = Buffer.concat([Buffer.from([0x0a, name.length]), name]);
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), message]);
    frame.writeUInt32BE(message.length, 1);
    return frame;
  };

  it("stalled: every console route and action answers 503 unavailable + Retry-After at STORE_TIMEOUT_MS (never 500) and changes nothing; the live list still opens; Connect, gRPC-Web and JSON-RPC answers carry Retry-After too", async () => {
    // A task waiting at its approval gate, and what the store holds of it before the stall.
    const started = await post("/a2a/jsonrpc", {
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: { message: msg03(randomUUID()), configuration: { blocking: false } },
    });
    const taskId = started.body["result"].id as string;
    const head = async () => (await db.collection("tasks").findOne({ _id: taskId } as never)) as Obj;
    const deadlineAt = Date.now() + 10_000;
    while ((await head())?.["status"] !== "waiting-approval") {
      if (Date.now() > deadlineAt)
        throw new Error(`task ${taskId} never reached its approval gate: ${JSON.stringify(await head())}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const before = await head();
    const eventsBefore = await db.collection("events").countDocuments({ taskId });
    // Warm the console's code paths (first calls load modules), so the timings measure the store budget.
    expect((await timed("GET", `/console/api/tasks/${taskId}`)).status).toBe(200);

    const consoleCalls: Record<string, () => ReturnType<typeof timed>> = {
      "GET /console/api/tasks": () => timed("GET", "/console/api/tasks"),
      "GET /console/api/tasks/{id}": () => timed("GET", `/console/api/tasks/${taskId}`),
      "GET /console/api/tasks/{id}/events": () => timed("GET", `/console/api/tasks/${taskId}/events`),
      "GET /console/api/tasks/{id}/push": () => timed("GET", `/console/api/tasks/${taskId}/push`),
      "POST /console/api/tasks/{id}/cancel": () =>
        timed("POST", `/console/api/tasks/${taskId}/cancel`, { body: { reason: "stalled" } }),
      "POST /console/api/tasks/{id}/interrupts/gate": () =>
        timed("POST", `/console/api/tasks/${taskId}/interrupts/gate`, { body: { resumeValue: { action: "accept" } } }),
      "POST /console/api/bulk/cancel": () => timed("POST", "/console/api/bulk/cancel", { body: { taskIds: [taskId] } }),
      "POST /console/api/bulk/retry-push": () =>
        timed("POST", "/console/api/bulk/retry-push", { body: { taskIds: [taskId] } }),
    };
    const otherCalls = {
      // GetTask without a deadline: held to STORE_TIMEOUT_MS, UNAVAILABLE.
      Connect: () => timed("POST", "/a2a.v1.A2AService/GetTask", { body: { name: `tasks/${taskId}` } }),
      "gRPC-Web": () =>
        timed("POST", "/a2a.v1.A2AService/GetTask", {
          raw: grpcWebGetTask(taskId),
          headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
        }),
      "JSON-RPC": () =>
        timed("POST", "/a2a/jsonrpc", { body: { jsonrpc: "2.0", id: 7, method: "tasks/get", params: { id: taskId } } }),
      // Streams that fail before their first event: 0.3 answers an SSE error event, 1.0 a plain JSON-RPC error.
      "JSON-RPC stream 0.3": () =>
        timed("POST", "/a2a/jsonrpc", {
          body: { jsonrpc: "2.0", id: 8, method: "tasks/resubscribe", params: { id: taskId } },
        }),
      "JSON-RPC stream 1.0": () =>
        timed("POST", "/a2a/jsonrpc", {
          body: { jsonrpc: "2.0", id: 9, method: "SubscribeToTask", params: { id: taskId } },
          headers: { "A2A-Version": "1.0" },
        }),
    };

    proxy.stall();
    // Should an answer wait for the store itself (the bug), the store comes back after three budgets, so the
    // test ends with a failed timing instead of hanging.
    const safety = setTimeout(() => proxy.resume(), 3 * STORE_TIMEOUT_MS);
    let answers: Array<[string, Awaited<ReturnType<typeof timed>>]>;
    let liveList: string;
    try {
      const live = new AbortController();
      const opening = fetch(`${base}/console/api/tasks/stream`, { signal: live.signal }).then(async (res) => {
        const reader = res.body!.getReader();
        const first = new TextDecoder().decode((await reader.read()).value);
        live.abort();
        return `${res.status} ${first}`;
      });
      [answers, liveList] = await Promise.all([
        Promise.all(
          Object.entries({ ...consoleCalls, ...otherCalls }).map(
            async ([name, call]) => [name, await call()] as [string, Awaited<ReturnType<typeof timed>>],
          ),
        ),
        opening,
      ]);
    } finally {
      clearTimeout(safety);
      proxy.resume();
    }

    // The live list does not wait for the store: it opens with its "ready" event while the store is stalled.
    expect(liveList).toMatch(/^200 [\s\S]*event: ready/);
    for (const [name, answer] of answers) {
      figures[`stalled:${name}`] = answer.ms;
      expect(answer.headers.get("retry-after"), name).toBe("1");
      // At the budget: not before it (the store was waited for), not long after (not the driver's own timeouts).
      expect(answer.ms, name).toBeGreaterThanOrEqual(STORE_TIMEOUT_MS - 10);
      // Thirteen calls at once on a shared machine: the bound, with room (still far below any driver timeout).
      expect(answer.ms, name).toBeLessThanOrEqual(STORE_TIMEOUT_MS + 10 * SLACK_MS);
      if (name in consoleCalls) {
        expect({ status: answer.status, error: answer.body?.["error"] }, name).toEqual({
          status: 503,
          error: "unavailable",
        });
        expect(answer.body?.["message"], name).toMatch(/task store .*retried/);
      }
    }
    const by = Object.fromEntries(answers);
    expect(by["Connect"]!.status).toBe(503);
    expect(by["Connect"]!.body?.["code"]).toBe("unavailable");
    // gRPC-Web: HTTP 200, the status in the trailer frame; the HTTP answer still says when to retry.
    expect(by["gRPC-Web"]!.status).toBe(200);
    expect(by["gRPC-Web"]!.text).toMatch(/grpc-status:\s*14/);
    expect(by["JSON-RPC"]!.status).toBe(200);
    expect(by["JSON-RPC"]!.body?.["error"]).toMatchObject({ code: -32603, data: { retryable: true } });
    expect(by["JSON-RPC stream 0.3"]!.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(by["JSON-RPC stream 0.3"]!.text).toMatch(/event: error[\s\S]*"retryable":true/);
    expect(by["JSON-RPC stream 1.0"]!.body?.["error"]).toMatchObject({
      code: -32603,
      data: [{ reason: "UNAVAILABLE" }],
    });

    // Nothing changed: no cancel, no approval, no event.
    const after = await head();
    expect({ version: after["version"], status: after["status"], state: after["a2a"]?.state }).toEqual({
      version: before["version"],
      status: "waiting-approval",
      state: before["a2a"]?.state,
    });
    expect(await db.collection("events").countDocuments({ taskId })).toBe(eventsBefore);
    // Once the store answers, the same console action goes through.
    const until = Date.now() + 20_000;
    let cancel = await timed("POST", `/console/api/tasks/${taskId}/cancel`, { body: { reason: "store back" } });
    while (cancel.status === 503 && Date.now() < until)
      cancel = await timed("POST", `/console/api/tasks/${taskId}/cancel`, { body: { reason: "store back" } });
    expect(cancel.status).toBe(202);
  });

  // ------------------------------------------------------------------ down

  it("down: every binding answers UNAVAILABLE / 503 + Retry-After / a retryable JSON-RPC error within STORE_TIMEOUT_MS; once back, the same requests succeed with exactly one task each", async () => {
    const before = await db.collection("tasks").countDocuments({});
    const keys = Object.fromEntries(Object.keys(sends).map((b) => [b, randomUUID()]));
    proxy.refuse();
    try {
      const answers = await Promise.all(
        Object.entries(sends).map(async ([binding, send]) => {
          const started = Date.now();
          const { answer } = await send(keys[binding]!);
          figures[`down:${binding}`] = Date.now() - started;
          return [binding, answer] as const;
        }),
      );
      for (const [binding, answer] of answers) {
        expectUnavailable(binding, answer);
        // Seven calls at once, gRPC's first one opening its HTTP/2 connection: the bound, with a little room.
        expect(figures[`down:${binding}`], binding).toBeLessThanOrEqual(STORE_TIMEOUT_MS + 5 * SLACK_MS);
      }
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
    } finally {
      proxy.accept();
    }
    const created: Record<string, string> = {};
    for (const [binding, send] of Object.entries(sends)) {
      created[binding] = await retryUntilDone(send, keys[binding]!);
      // A second retry answers the same task: nothing duplicated.
      expect(await retryUntilDone(send, keys[binding]!), binding).toBe(created[binding]);
    }
    for (const [binding, taskId] of Object.entries(created)) {
      expect(await tasksWithId(taskId), binding).toBe(1);
      // Nothing half-written: the head reads back through the API, with its log up to its version.
      const head = (await db.collection("tasks").findOne({ _id: taskId } as never)) as Obj;
      const events = await store.readEvents(taskId, 0);
      expect(
        events.map((e) => e.sequence),
        binding,
      ).toEqual(Array.from({ length: head["version"] + 1 }, (_, i) => i));
    }
    expect(await db.collection("tasks").countDocuments({})).toBe(before + Object.keys(sends).length);
  });
});
