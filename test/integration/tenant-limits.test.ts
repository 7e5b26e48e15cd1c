// Every limit of TENANT_LIMITS on every binding: JSON-RPC 0.3, HTTP+JSON 1.0, gRPC 1.0 (connect-es over h2c) and the
// OpenWOP REST runs API. Each refusal is read in its binding's own form (429 + Retry-After, RESOURCE_EXHAUSTED +
// google.rpc.RetryInfo, JSON-RPC -32029 with the retry time in `data`, `rate_limited`), writes nothing, and what
// creates nothing (a reply, an approval, a read, a cancel) is served at the running-task cap.
import { randomBytes, randomUUID } from "node:crypto";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { A2AService, Role } from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
const BINDINGS = ["jsonrpc", "rest", "grpc", "openwop"] as const;
type Binding = (typeof BINDINGS)[number];
const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage"];
const KINDS = ["rps", "tpm", "run", "str", "push", "zero", "free"] as const;
const keyOf = (id: string) => `${id}-key-0123456789abcdef0123`;

/** One key (and tenant of the same name) per kind of limit and binding, so no test spends another's allowance. */
function limitsEnv(): Record<string, string> {
  const keys: Obj[] = [];
  const tenants: Obj = {};
  const byKey: Obj = {};
  for (const b of BINDINGS)
    for (const kind of KINDS) {
      const id = `${kind}-${b}`;
      keys.push({ id, tenant: id, scopes: ALL, key: keyOf(id) });
      // requestsPerSecond is the key's own entry (its own allowance); the rest are the tenant's.
      if (kind === "rps") byKey[id] = { requestsPerSecond: 0.001, burst: 2 };
      if (kind === "tpm") tenants[id] = { tasksPerMinute: 1 };
      if (kind === "run") tenants[id] = { runningTasks: 1 };
      if (kind === "str") tenants[id] = { streams: 1 };
      if (kind === "push") tenants[id] = { pushConfigsPerTask: 1 };
      if (kind === "zero") tenants[id] = { runningTasks: 0 };
    }
  return {
    API_KEYS: JSON.stringify(keys),
    TENANT_LIMITS: JSON.stringify({ default: {}, tenants, keys: byKey }),
    PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
    PUSH_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    PUSH_SIGNING_KEY: `test-signing-key-${randomBytes(16).toString("hex")}`,
  };
}

/** A refusal as every binding shows it, normalized: what the caller can read about when to retry and why. */
interface Refusal {
  binding: Binding;
  /** HTTP status (gRPC: none, the status is in trailers). */
  status?: number;
  retryAfterHeader?: string | null;
  /** The retry time the body (or status details) carries. */
  retrySeconds?: number;
  message: string;
  /** `details.limit` / ErrorInfo metadata `limit`, where the shape carries it. */
  limit?: string;
}
type Answer = { ok: true; body: Obj } | { ok: false; refusal: Refusal };

describe("tenant limits on every binding", () => {
  let t: TestApp;
  let store: MemoryTaskStore;
  beforeAll(async () => {
    store = new MemoryTaskStore();
    t = await startTestApp(limitsEnv(), store);
  });
  afterAll(() => t.close());

  const auth = (id: string) => ({ authorization: `Bearer ${keyOf(id)}` });
  const grpc = (): Client<typeof A2AService> => createClient(A2AService, createGrpcTransport({ baseUrl: t.baseUrl }));

  async function httpAnswer(binding: Binding, res: Response): Promise<Answer> {
    const body = (await res.json()) as Obj;
    if (res.status === 200 || res.status === 201 || res.status === 202) {
      if (binding === "jsonrpc" && body["error"]) throw new Error(`JSON-RPC error: ${JSON.stringify(body["error"])}`);
      return { ok: true, body: binding === "jsonrpc" ? body["result"] : body };
    }
    const retryAfterHeader = res.headers.get("retry-after");
    if (binding === "jsonrpc") {
      expect(body["error"]["code"]).toBe(-32029);
      const data = body["error"]["data"];
      return {
        ok: false,
        refusal: {
          binding,
          status: res.status,
          retryAfterHeader,
          retrySeconds: data["retryAfterSeconds"],
          message: body["error"]["message"],
          limit: data["limit"],
        },
      };
    }
    if (binding === "rest") {
      const error = body["error"];
      expect(error["status"]).toBe("RESOURCE_EXHAUSTED");
      const info = error["details"].find((d: Obj) => d["@type"].endsWith("ErrorInfo"));
      const retry = error["details"].find((d: Obj) => d["@type"].endsWith("RetryInfo"));
      expect(info["reason"]).toBe("RATE_LIMITED");
      return {
        ok: false,
        refusal: {
          binding,
          status: res.status,
          retryAfterHeader,
          retrySeconds: Number(String(retry["retryDelay"]).replace(/s$/, "")),
          message: error["message"],
          limit: info["metadata"]["limit"],
        },
      };
    }
    expect(body["error"]).toBe("rate_limited");
    return {
      ok: false,
      refusal: {
        binding,
        status: res.status,
        retryAfterHeader,
        retrySeconds: body["details"]?.["retryAfterSeconds"],
        message: body["message"],
        limit: body["details"]?.["limit"],
      },
    };
  }

  async function grpcAnswer(call: Promise<unknown>): Promise<Answer> {
    try {
      return { ok: true, body: (await call) as Obj };
    } catch (err) {
      if (!(err instanceof ConnectError) || err.code !== Code.ResourceExhausted) throw err;
      const detail = (type: string) =>
        (err.details.find((d) => "type" in d && d.type === type) as { value: Uint8Array } | undefined)?.value;
      const retry = detail("google.rpc.RetryInfo");
      const info = detail("google.rpc.ErrorInfo");
      return {
        ok: false,
        refusal: {
          binding: "grpc",
          ...(retry ? { retrySeconds: retryDelaySeconds(retry) } : {}),
          message: err.rawMessage,
          ...(info ? { limit: errorInfoMetadata(info)["limit"] } : {}),
        },
      };
    }
  }

  const rpc = (id: string, method: string, params: unknown, headers: Obj = {}) =>
    fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth(id), ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
    });
  const rest = (id: string, path: string, body?: unknown, init: RequestInit = {}) =>
    fetch(`${t.baseUrl}${path}`, {
      method: body === undefined ? "GET" : "POST",
      ...init,
      headers: { "A2A-Version": "1.0", "content-type": "application/a2a+json", ...auth(id) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  const openwop = (id: string, path: string, body?: unknown, init: RequestInit = {}) =>
    fetch(`${t.baseUrl}${path}`, {
      method: body === undefined ? "GET" : "POST",
      ...init,
      headers: { "content-type": "application/json", ...auth(id) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });

  /** A new approval-gate task (it waits for a decision: it stays unfinished). */
  async function create(binding: Binding, id: string): Promise<Answer> {
    const text = "Send the quarterly report";
    if (binding === "jsonrpc") {
      const message = { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text }] };
      return httpAnswer(
        binding,
        await rpc(id, "message/send", { message: { ...message, metadata: { skillId: "approval-gate" } } }),
      );
    }
    if (binding === "rest") {
      const message = {
        messageId: randomUUID(),
        role: "ROLE_USER",
        parts: [{ text }],
        metadata: { skillId: "approval-gate" },
      };
      const answer = await httpAnswer(binding, await rest(id, "/message:send", { message }));
      return answer.ok ? { ok: true, body: answer.body["task"] } : answer;
    }
    if (binding === "grpc") {
      const message = {
        messageId: randomUUID(),
        role: Role.USER,
        parts: [{ content: { case: "text" as const, value: text } }],
        metadata: { skillId: "approval-gate" },
      };
      const answer = await grpcAnswer(grpc().sendMessage({ message }, { headers: auth(id) }));
      return answer.ok ? { ok: true, body: { id: (answer.body["payload"]["value"] as Obj)["id"] } } : answer;
    }
    const answer = await httpAnswer(
      binding,
      await openwop(id, "/v1/runs", { workflowId: "approval-gate", inputs: { text } }),
    );
    return answer.ok ? { ok: true, body: { id: answer.body["runId"] } } : answer;
  }

  /** The id of a created task (the test fails when it was refused). */
  async function created(binding: Binding, id: string): Promise<string> {
    const answer = await create(binding, id);
    if (!answer.ok) throw new Error(`refused: ${answer.refusal.message}`);
    return answer.body["id"] as string;
  }

  async function read(binding: Binding, id: string, taskId: string): Promise<Answer> {
    if (binding === "jsonrpc") return httpAnswer(binding, await rpc(id, "tasks/get", { id: taskId }));
    if (binding === "rest") return httpAnswer(binding, await rest(id, `/tasks/${taskId}`));
    if (binding === "grpc") return grpcAnswer(grpc().getTask({ id: taskId }, { headers: auth(id) }));
    return httpAnswer(binding, await openwop(id, `/v1/runs/${taskId}`));
  }

  /** The decision the approval gate waits for: a reply (A2A) or the interrupt's resolution (OpenWOP). */
  async function approve(binding: Binding, id: string, taskId: string): Promise<Answer> {
    if (binding === "jsonrpc") {
      const parts = [{ kind: "data", data: { action: "accept" } }];
      const message = { kind: "message", messageId: randomUUID(), role: "user", taskId, parts };
      return httpAnswer(binding, await rpc(id, "message/send", { message }));
    }
    if (binding === "rest") {
      const message = { messageId: randomUUID(), role: "ROLE_USER", taskId, parts: [{ data: { action: "accept" } }] };
      return httpAnswer(binding, await rest(id, "/message:send", { message }));
    }
    if (binding === "grpc") {
      const message = {
        messageId: randomUUID(),
        role: Role.USER,
        taskId,
        parts: [{ content: { case: "data" as const, value: fromJson(ValueSchema, { action: "accept" }) } }],
      };
      return grpcAnswer(grpc().sendMessage({ message }, { headers: auth(id) }));
    }
    return httpAnswer(
      binding,
      await openwop(id, `/v1/runs/${taskId}/interrupts/gate`, { resumeValue: { action: "accept" } }),
    );
  }

  async function cancel(binding: Binding, id: string, taskId: string): Promise<Answer> {
    if (binding === "jsonrpc") return httpAnswer(binding, await rpc(id, "tasks/cancel", { id: taskId }));
    if (binding === "rest") return httpAnswer(binding, await rest(id, `/tasks/${taskId}:cancel`, {}));
    if (binding === "grpc") return grpcAnswer(grpc().cancelTask({ id: taskId }, { headers: auth(id) }));
    return httpAnswer(binding, await openwop(id, `/v1/runs/${taskId}/cancel`, {}));
  }

  /** A stream of a waiting task, held open until `close`; or its refusal. */
  async function openStream(
    binding: Binding,
    id: string,
    taskId: string,
  ): Promise<{ ok: true; close: () => void } | { ok: false; refusal: Refusal }> {
    const abort = new AbortController();
    const close = () => abort.abort();
    if (binding === "grpc") {
      const stream = grpc().subscribeToTask({ id: taskId }, { headers: auth(id), signal: abort.signal });
      const first = await grpcAnswer(stream[Symbol.asyncIterator]().next());
      return first.ok ? { ok: true, close } : first;
    }
    const res =
      binding === "jsonrpc"
        ? await rpc(id, "tasks/resubscribe", { id: taskId }, { accept: "text/event-stream" })
        : binding === "rest"
          ? await rest(id, `/tasks/${taskId}:subscribe`, undefined, { signal: abort.signal })
          : await openwop(id, `/v1/runs/${taskId}/events`, undefined, { signal: abort.signal });
    if (res.headers.get("content-type")?.includes("text/event-stream")) {
      // JSON-RPC's fetch above has no signal: its body is cancelled instead.
      return { ok: true, close: () => (abort.abort(), void res.body?.cancel().catch(() => undefined)) };
    }
    const answer = await httpAnswer(binding, res);
    if (answer.ok) throw new Error("a stream answered without a stream");
    return answer;
  }

  async function pushConfig(binding: Binding, id: string, taskId: string, configId: string): Promise<Answer> {
    const url = "http://127.0.0.1:9/hook";
    if (binding === "jsonrpc")
      return httpAnswer(
        binding,
        await rpc(id, "tasks/pushNotificationConfig/set", { taskId, pushNotificationConfig: { id: configId, url } }),
      );
    if (binding === "rest")
      return httpAnswer(
        binding,
        await rest(id, `/tasks/${taskId}/pushNotificationConfigs`, { taskId, id: configId, url }),
      );
    return grpcAnswer(grpc().createTaskPushNotificationConfig({ taskId, id: configId, url }, { headers: auth(id) }));
  }

  /** The refusal's form on its binding: 429 + Retry-After on HTTP, RetryInfo on gRPC, the limit named. */
  function expectRefusal(answer: Answer, limit: string): Refusal {
    expect(answer.ok).toBe(false);
    const refusal = (answer as { refusal: Refusal }).refusal;
    if (refusal.binding !== "grpc") {
      expect(refusal.status).toBe(429);
      expect(Number(refusal.retryAfterHeader)).toBeGreaterThanOrEqual(1);
    }
    expect(refusal.retrySeconds).toBeGreaterThanOrEqual(1);
    expect(refusal.limit).toBe(limit);
    expect(refusal.message).toContain(limit);
    return refusal;
  }

  describe.each(BINDINGS.map((b) => [b]))("%s", (binding) => {
    it("requestsPerSecond: the burst is served, the next call is refused before it runs, and writes nothing", async () => {
      const id = `rps-${binding}`;
      const taskId = await created(binding, id);
      expect((await read(binding, id, taskId)).ok).toBe(true);
      const tasks = store.size;
      const refused = expectRefusal(await create(binding, id), "requestsPerSecond");
      expect(refused.message).toContain(`the API key "${id}"`);
      expect(store.size).toBe(tasks);
      // A read is a request too: the same allowance.
      expectRefusal(await read(binding, id, taskId), "requestsPerSecond");
      // Another key is not charged.
      expect((await create(binding, `free-${binding}`)).ok).toBe(true);
    });

    it("tasksPerMinute: the second new task is refused; reads, replies and cancels are served", async () => {
      const id = `tpm-${binding}`;
      const taskId = await created(binding, id);
      const tasks = store.size;
      const refused = expectRefusal(await create(binding, id), "tasksPerMinute");
      expect(refused.message).toContain(`tenant "${id}"`);
      expect(store.size).toBe(tasks);
      expect((await read(binding, id, taskId)).ok).toBe(true);
      expect((await approve(binding, id, taskId)).ok).toBe(true);
    });

    it("runningTasks: at the cap a new task is refused; a reply, a read and a cancel are served, and then a task fits", async () => {
      const id = `run-${binding}`;
      const first = await created(binding, id);
      const tasks = store.size;
      const refused = expectRefusal(await create(binding, id), "runningTasks");
      expect(refused.message).toContain("1 unfinished task:");
      expect(store.size).toBe(tasks);
      // The tenant at its cap still reads, approves and cancels: none of them creates a task.
      expect((await read(binding, id, first)).ok).toBe(true);
      expect((await approve(binding, id, first)).ok).toBe(true);
      await untilEnded(first);
      const next = await created(binding, id);
      expect((await cancel(binding, id, next)).ok).toBe(true);
      await untilEnded(next);
      expect(await created(binding, id)).toEqual(expect.any(String));
    });

    it("streams: a second stream is refused while the first is open, and fits once it closes", async () => {
      const id = `str-${binding}`;
      const taskId = await created(binding, id);
      const first = await openStream(binding, id, taskId);
      expect(first.ok).toBe(true);
      const second = await openStream(binding, id, taskId);
      expectRefusal(second as Answer, "streams");
      (first as { close: () => void }).close();
      // The server notices the close on its own time: ask again until the place is given back.
      let third = await openStream(binding, id, taskId);
      for (let i = 0; i < 200 && !third.ok; i++) {
        await new Promise((r) => setTimeout(r, 20));
        third = await openStream(binding, id, taskId);
      }
      expect(third.ok).toBe(true);
      (third as { close: () => void }).close();
    });

    // OpenWOP REST registers no push configs: the A2A bindings only.
    if (binding !== "openwop")
      it("pushConfigsPerTask: a task's second config is refused", async () => {
        const id = `push-${binding}`;
        const taskId = await created(binding, id);
        expect((await pushConfig(binding, id, taskId, "a")).ok).toBe(true);
        // The same id again replaces it: no new config, so no refusal.
        expect((await pushConfig(binding, id, taskId, "a")).ok).toBe(true);
        expectRefusal(await pushConfig(binding, id, taskId, "b"), "pushConfigsPerTask");
      });

    it("a limit of 0: the tenant gets nothing, and is told so", async () => {
      const id = `zero-${binding}`;
      const tasks = store.size;
      const refused = expectRefusal(await create(binding, id), "runningTasks");
      expect(refused.message).toBe(`tenant "${id}" may run no tasks: its runningTasks limit is 0`);
      expect(store.size).toBe(tasks);
    });
  });

  it("OpenWOP 2 answers rate_limited with Retry-After, and keeps the retry time out of the body (errors.md)", async () => {
    const res = await fetch(`${t.baseUrl}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json", "openwop-version": "2", ...auth("zero-openwop") },
      body: JSON.stringify({ workflowId: "approval-gate", inputs: { text: "x" } }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("60");
    const body = (await res.json()) as Obj;
    expect(body).toEqual({
      error: "rate_limited",
      message: 'tenant "zero-openwop" may run no tasks: its runningTasks limit is 0',
      details: { limit: "runningTasks", tenant: "zero-openwop", allowed: 0 },
    });
  });

  it("Connect and gRPC-Web answer a refusal on HTTP too: Connect 429, both with Retry-After and the RetryInfo", async () => {
    const id = "zero-grpc";
    const body = {
      message: { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text: "x" }], metadata: { skillId: "echo" } },
    };
    const connect = await fetch(`${t.baseUrl}/lf.a2a.v1.A2AService/SendMessage`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1", ...auth(id) },
      body: JSON.stringify(body),
    });
    expect(connect.status).toBe(429);
    expect(connect.headers.get("retry-after")).toBe("60");
    const error = (await connect.json()) as Obj;
    expect(error["code"]).toBe("resource_exhausted");
    expect((error["details"] as Obj[]).map((d) => d["type"])).toEqual(["google.rpc.ErrorInfo", "google.rpc.RetryInfo"]);
    const web = await fetch(`${t.baseUrl}/lf.a2a.v1.A2AService/SendMessage`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+json", "x-grpc-web": "1", ...auth(id) },
      body: grpcWebFrame(JSON.stringify(body)),
    });
    expect(web.status).toBe(200);
    expect(web.headers.get("retry-after")).toBe("60");
    expect(Buffer.from(await web.arrayBuffer()).toString("latin1")).toMatch(/grpc-status: ?8\b/);
  });

  async function untilEnded(taskId: string): Promise<void> {
    for (let i = 0; i < 500; i++) {
      const record = await store.get(taskId);
      if (record && ["completed", "failed", "cancelled"].includes(record.status)) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`task ${taskId} did not end`);
  }
});

/** One uncompressed gRPC-Web message frame. */
function grpcWebFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** google.rpc.ErrorInfo bytes: its metadata (3, map<string, string>: entries of key 1, value 2). */
function errorInfoMetadata(bytes: Uint8Array): Record<string, string> {
  const reader = new BinaryReader(bytes);
  const metadata: Record<string, string> = {};
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field !== 3) {
      reader.skip(wireType);
      continue;
    }
    const entry = new BinaryReader(reader.bytes());
    let key = "";
    let value = "";
    while (entry.pos < entry.len) {
      const [f] = entry.tag();
      if (f === 1) key = entry.string();
      else value = entry.string();
    }
    metadata[key] = value;
  }
  return metadata;
}

/** google.rpc.RetryInfo bytes: retry_delay (1) → Duration.seconds (1), a varint. */
function retryDelaySeconds(bytes: Uint8Array): number {
  expect(bytes[0]).toBe(0x0a);
  expect(bytes[2]).toBe(0x08);
  let value = 0;
  for (let i = 3, shift = 0; i < bytes.length; i++, shift += 7) {
    value += (bytes[i]! & 0x7f) * 2 ** shift;
    if ((bytes[i]! & 0x80) === 0) break;
  }
  return value;
}
