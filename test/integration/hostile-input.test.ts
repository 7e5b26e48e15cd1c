// Issue 12, items 8 and 10: hostile input never poisons a task or a tenant, and malformed RPC bytes are the
// caller's fault. Nesting deeper than MAX_INPUT_DEPTH is refused before anything is stored, on every binding;
// a 3 000-level input gets that clear error (no stack overflow); a task stored with a value too deep for the
// wire (as before the bound existed) does not break ListTasks, GetTask or streams; Connect/gRPC/gRPC-Web
// answer INVALID_ARGUMENT for junk protobuf and for a compressed frame without an encoding; an oversized gRPC
// frame on a fresh HTTP/2 session gets RESOURCE_EXHAUSTED at once and its stream is reset, so the caller can
// finish its call and the session stays usable.
import { connect } from "node:http2";
import { randomUUID } from "node:crypto";
import { create, fromJson, toBinary, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v03pb from "../../src/gen/a2a/v1/a2a_pb.js";
import * as v10pb from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import type { TaskListPage, TaskListQuery } from "../../src/store/task-store.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { grpcFrame } from "../support/grpc-frame.js";

type Obj = Record<string, any>;
type Rpc = { id: unknown; result?: Obj; error?: { code: number; message: string } };

const nest = (depth: number): unknown => {
  let value: unknown = "bottom";
  for (let i = 0; i < depth; i++) value = { d: value };
  return value;
};

/** Counts creations, and can make a stored task hold a value deeper than the wire carries (as data stored before the bound). */
class HostileStore extends MemoryTaskStore {
  created = 0;
  readonly poisoned = new Set<string>();
  override async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    this.created++;
    return super.create(record, events);
  }
  override async get(taskId: string): Promise<TaskRecord | null> {
    return this.poison(await super.get(taskId));
  }
  override async list(query: TaskListQuery): Promise<TaskListPage> {
    const page = await super.list(query);
    return { ...page, records: page.records.map((r) => this.poison(r)!) };
  }
  private poison(stored: TaskRecord | null): TaskRecord | null {
    if (!stored || !this.poisoned.has(stored.taskId)) return stored;
    // The memory store hands out its frozen records: poison a copy, as if it had been read so from a database.
    const record = structuredClone(stored);
    const context = (record.snapshot as { context: { history: Array<{ parts: unknown[]; metadata?: unknown }> } })
      .context;
    context.history[0]!.parts.push({ kind: "data", data: nest(101) as Record<string, unknown> });
    context.history[0]!.metadata = nest(150);
    return record;
  }
}

describe("hostile input", () => {
  let t: TestApp;
  let store: HostileStore;
  beforeAll(async () => {
    store = new HostileStore();
    t = await startTestApp({ MAX_INPUT_DEPTH: "32" }, store);
  });
  afterAll(() => t?.close());

  const v10 = { "A2A-Version": "1.0" };
  const post = (path: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
    fetch(`${t.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  async function rpc(method: string, params: unknown, headers: Record<string, string> = {}): Promise<Rpc> {
    const res = await post("/a2a/jsonrpc", JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }), headers);
    expect(res.status).toBe(200);
    return (await res.json()) as Rpc;
  }
  const msg03 = (data: unknown) => ({
    kind: "message",
    messageId: randomUUID(),
    role: "user",
    parts: [{ kind: "data", data }],
    metadata: { skillId: "echo" },
  });
  const msg10 = (data: unknown) => ({
    messageId: randomUUID(),
    role: "ROLE_USER",
    parts: [{ data }],
    metadata: { skillId: "echo" },
  });
  const proto03 = (data: unknown) => ({
    messageId: randomUUID(),
    role: "ROLE_USER",
    content: [{ data: { data } }],
    metadata: { skillId: "echo" },
  });

  /** One HTTP/2 gRPC call with raw frame bytes on a fresh session; also tells whether the request stream was closed. */
  async function grpcRaw(path: string, body: Buffer, headers: Record<string, string> = {}) {
    const session = connect(t.baseUrl);
    try {
      const answer = await new Promise<{ status?: string; message: string; closed: boolean; rstCode?: number }>(
        (resolve, reject) => {
          const req = session.request({
            ":method": "POST",
            ":path": path,
            "content-type": "application/grpc",
            te: "trailers",
            ...headers,
          });
          let trailers: Obj = {};
          req.on("trailers", (h) => (trailers = h));
          req.on("error", reject);
          req.resume();
          req.on("close", () =>
            resolve({
              status: trailers["grpc-status"],
              message: decodeURIComponent(String(trailers["grpc-message"] ?? "")),
              closed: true,
              rstCode: req.rstCode,
            }),
          );
          req.end(body);
        },
      );
      // The session is still usable: a second call on it answers.
      const again = await new Promise<string | undefined>((resolve, reject) => {
        const req = session.request({
          ":method": "POST",
          ":path": "/a2a.v1.A2AService/GetAgentCard",
          "content-type": "application/grpc",
          te: "trailers",
        });
        let status: string | undefined;
        req.on("trailers", (h) => (status = h["grpc-status"] as string));
        req.on("error", reject);
        req.resume();
        req.on("close", () => resolve(status));
        req.end(grpcFrame(new Uint8Array()));
      });
      return { ...answer, again };
    } finally {
      session.close();
    }
  }

  it("item 8: deeper than MAX_INPUT_DEPTH is refused before anything is stored, on every binding and version", async () => {
    const before = store.created;
    const tooDeep = nest(33);
    const r03 = await rpc("message/send", { message: msg03(tooDeep) });
    expect(r03.error?.code).toBe(-32602);
    expect(r03.error?.message).toMatch(/nested too deeply.*32/);
    const r10 = await rpc("SendMessage", { message: msg10(tooDeep) }, v10);
    expect(r10.error?.code).toBe(-32602);
    const rest03 = await post("/v1/message:send", JSON.stringify({ message: proto03(tooDeep) }));
    expect(rest03.status).toBe(400);
    const rest10 = await post("/message:send", JSON.stringify({ message: msg10(tooDeep) }), v10);
    expect(rest10.status).toBe(400);
    expect(((await rest10.json()) as Obj)["error"]["message"]).toMatch(/nested too deeply/);
    const connect03 = await post("/a2a.v1.A2AService/SendMessage", JSON.stringify({ message: proto03(tooDeep) }));
    expect(connect03.status).toBe(400);
    expect(((await connect03.json()) as Obj)["message"]).toMatch(/nested too deeply/);
    const metadataDeep = await rpc("message/send", {
      message: { ...msg03({ ok: true }), metadata: { skillId: "echo", x: nest(40) } },
    });
    expect(metadataDeep.error?.code).toBe(-32602);
    // gRPC binary (no JSON anywhere): the same bound, checked where every binding meets.
    // A Value with no kind inside is malformed input, not an internal error.
    const noKind = create(v10pb.SendMessageRequestSchema, {
      message: {
        messageId: randomUUID(),
        role: v10pb.Role.USER,
        parts: [{ content: { case: "data", value: create(ValueSchema) } }],
      },
    });
    const malformed = await grpcRaw(
      "/lf.a2a.v1.A2AService/SendMessage",
      grpcFrame(toBinary(v10pb.SendMessageRequestSchema, noKind)),
      v10,
    );
    expect(malformed.status, malformed.message).toBe("3");
    const request = create(v10pb.SendMessageRequestSchema, {
      message: {
        messageId: randomUUID(),
        role: v10pb.Role.USER,
        parts: [{ content: { case: "data", value: fromJson(ValueSchema, tooDeep as JsonValue) } }],
      },
    });
    const grpc = await grpcRaw(
      "/lf.a2a.v1.A2AService/SendMessage",
      grpcFrame(toBinary(v10pb.SendMessageRequestSchema, request)),
      v10,
    );
    expect(grpc.status, grpc.message).toBe("3");
    expect(grpc.message).toMatch(/nested too deeply/);
    expect(store.created).toBe(before);
    // At the bound it is accepted.
    const atBound = await rpc("message/send", { message: msg03(nest(32)) });
    expect(atBound.result?.["status"]["state"]).toBe("completed");
  });

  it("item 8: a 3 000-level input gets the clear error on every binding, never a stack overflow", async () => {
    const before = store.created;
    const huge = nest(3000);
    const r03 = await rpc("message/send", { message: msg03(huge) });
    expect(r03.error?.code).toBe(-32602);
    expect(r03.error?.message).toMatch(/nested too deeply/);
    const r10 = await rpc("SendMessage", { message: msg10(huge) }, v10);
    expect(r10.error?.code).toBe(-32602);
    expect((await post("/v1/message:send", JSON.stringify({ message: proto03(huge) }))).status).toBe(400);
    expect((await post("/message:send", JSON.stringify({ message: msg10(huge) }), v10)).status).toBe(400);
    const connect10 = await post("/lf.a2a.v1.A2AService/SendMessage", JSON.stringify({ message: msg10(huge) }), v10);
    expect(connect10.status).toBe(400);
    expect(((await connect10.json()) as Obj)["code"]).toBe("invalid_argument");
    const runs = await post("/v1/runs", JSON.stringify({ workflowId: "conformance-noop", input: huge }));
    expect(runs.status).toBe(400);
    expect(((await runs.json()) as Obj)["message"]).toMatch(/nested too deeply/);
    expect(store.created).toBe(before);
  });

  it("item 8: a stored task too deep for the wire is degraded, and ListTasks, GetTask and streams keep working for the tenant", async () => {
    const good = await rpc("SendMessage", { message: msg10({ fine: 1 }) }, v10);
    const poisoned = await rpc("SendMessage", { message: msg10({ fine: 2 }) }, v10);
    const poisonedId = poisoned.result!["task"]["id"] as string;
    store.poisoned.add(poisonedId);

    const list = await rpc("ListTasks", { pageSize: 100, historyLength: 10 }, v10);
    expect(list.error).toBeUndefined();
    const ids = (list.result!["tasks"] as Obj[]).map((task) => task["id"]);
    expect(ids).toEqual(expect.arrayContaining([good.result!["task"]["id"], poisonedId]));
    const restList = await fetch(`${t.baseUrl}/tasks?pageSize=100`, { headers: v10 });
    expect(restList.status).toBe(200);

    const get = await rpc("GetTask", { id: poisonedId }, v10);
    expect(get.error).toBeUndefined();
    const history = get.result!["history"] as Obj[];
    expect(JSON.stringify(history[0])).toContain("unencodable");
    const get03 = await rpc("tasks/get", { id: poisonedId });
    expect(get03.error).toBeUndefined();
    const grpc = await grpcRaw(
      "/lf.a2a.v1.A2AService/GetTask",
      grpcFrame(toBinary(v10pb.GetTaskRequestSchema, create(v10pb.GetTaskRequestSchema, { id: poisonedId }))),
      v10,
    );
    expect(grpc.status).toBe("0");

    const stream = await fetch(`${t.baseUrl}/tasks/${poisonedId}:subscribe`, { headers: v10 });
    // A completed task cannot be subscribed to over 1.0; over 0.3 its Task is answered and the stream closes.
    expect(stream.status).toBe(400);
    const stream03 = await post(
      "/a2a/jsonrpc",
      JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tasks/resubscribe", params: { id: poisonedId } }),
    );
    const events = await readSse(stream03);
    expect(events.length).toBeGreaterThan(0);
  });

  it("item 10: malformed RPC bytes are INVALID_ARGUMENT on Connect, gRPC and gRPC-Web, and create nothing", async () => {
    const before = store.created;
    const junk = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
    const connectUnary = await post("/a2a.v1.A2AService/SendMessage", junk, { "content-type": "application/proto" });
    expect(connectUnary.status).toBe(400);
    expect(((await connectUnary.json()) as Obj)["code"]).toBe("invalid_argument");
    const valid = toBinary(
      v03pb.SendMessageRequestSchema,
      create(v03pb.SendMessageRequestSchema, {
        request: { messageId: randomUUID(), role: v03pb.Role.USER, content: [{ part: { case: "text", value: "x" } }] },
      }),
    );

    const grpcJunk = await grpcRaw("/a2a.v1.A2AService/SendMessage", grpcFrame(junk));
    expect(grpcJunk.status).toBe("3");
    const grpcCompressed = await grpcRaw("/a2a.v1.A2AService/SendMessage", grpcFrame(valid, 1));
    expect(grpcCompressed.status).toBe("3");
    expect(grpcCompressed.message).toContain("compressed flag");

    for (const payload of [grpcFrame(valid, 1), grpcFrame(junk)]) {
      const web = await post("/a2a.v1.A2AService/SendMessage", payload, {
        "content-type": "application/grpc-web+proto",
      });
      const trailer = Buffer.from(await web.arrayBuffer()).toString("latin1");
      expect(trailer).toMatch(/grpc-status: ?3\b/);
    }
    expect(store.created).toBe(before);
  });

  it("item 10: an oversized gRPC frame on a fresh HTTP/2 session answers RESOURCE_EXHAUSTED at once and resets the request side", async () => {
    const size = 2 * 1024 * 1024;
    const body = Buffer.alloc(size + 5, 1);
    body[0] = 0;
    body.writeUInt32BE(size, 1);
    const answer = await grpcRaw("/a2a.v1.A2AService/GetTask", body);
    expect(answer.status).toBe("8");
    expect(answer.message).toContain("readMaxBytes");
    // The stream closed although the client never got to send its 2 MB (RST_STREAM NO_ERROR after the
    // trailers): without it the call never completes for clients that wait for their send side.
    expect(answer.closed).toBe(true);
    expect(answer.rstCode).toBe(0);
    expect(answer.again).toBe("0");
  });

  // Trust under attack, item 5.1: any nesting depth and any size get the protocol's own answer on every
  // binding (invalid argument; too large: 413 / RESOURCE_EXHAUSTED), never INTERNAL, and no answer repeats
  // the parser's text or the body's bytes.
  describe("any depth, any junk, any size", () => {
    const SECRET = "s3cr3t-body-bytes";
    const deepText = (depth: number) => '{"d":'.repeat(depth) + '"x"' + "}".repeat(depth);
    const deep = deepText(100_000);
    const junk = `{"message": {"messageId": "m", "role": ${SECRET}}}`;
    /** A Value nested `depth` levels (Struct in Value), as protobuf binary inside an lf.a2a.v1.SendMessageRequest (protobuf-es cannot encode it). */
    function deepBinaryRequest(depth: number): Buffer {
      const varint = (n: number) => {
        const out: number[] = [];
        for (; n > 127; n = Math.floor(n / 128)) out.push((n & 127) | 128);
        out.push(n);
        return out;
      };
      // Outside in: request.message (2), message_id "m" + role USER + parts (5), part.data (4), then Value.struct_value (5) → Struct.fields (1) → entry key "d" + value (2).
      const layers: number[][] = [[0x12], [0x0a, 1, 0x6d, 0x20, 1, 0x2a], [0x22]];
      for (let i = 0; i < depth; i++) layers.push([0x2a], [0x0a], [0x0a, 1, 0x64, 0x12]);
      const core = [0x1a, 1, 0x78]; // Value.string_value "x"
      const heads: number[][] = [];
      let length = core.length;
      for (let i = layers.length - 1; i >= 0; i--) {
        const head = [...layers[i]!, ...varint(length)];
        heads.push(head);
        length += head.length;
      }
      return Buffer.from([...heads.reverse().flat(), ...core]);
    }
    const noEcho = (text: string) => {
      expect(text).not.toContain(SECRET);
      expect(text).not.toMatch(/Unexpected token|is not valid JSON\b.*\.\.\.|recursion depth|"d":\{/);
    };
    async function still() {
      // The server is still up and answers normally.
      expect((await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).status).toBe(200);
    }
    const rpcBody = (method: string, params: string) =>
      `{"jsonrpc":"2.0","id":7,"method":"${method}","params":${params}}`;

    it("JSON-RPC (0.3 and 1.0), HTTP+JSON (0.3 and 1.0) and OpenWOP REST: invalid params / parse error, no echo", async () => {
      const before = store.created;
      for (const [body, code] of [
        [deep, -32602],
        [junk, -32700],
      ] as const) {
        for (const [method, headers] of [
          ["message/send", {}],
          ["SendMessage", v10],
        ] as const) {
          const res = await post("/a2a/jsonrpc", rpcBody(method, `{"message":${body}}`), headers);
          expect(res.status).toBe(200);
          const text = await res.text();
          expect((JSON.parse(text) as Rpc).error?.code).toBe(code);
          noEcho(text);
        }
        for (const [path, headers] of [
          ["/v1/message:send", {}],
          ["/message:send", v10],
        ] as const) {
          const res = await post(path, `{"message":${body}}`, headers);
          expect(res.status).toBe(400);
          noEcho(await res.text());
        }
        const runs = await post("/v1/runs", `{"workflowId":"conformance-noop","input":${body}}`);
        expect(runs.status).toBe(400);
        const text = await runs.text();
        expect((JSON.parse(text) as Obj)["error"]).toBe("validation_error");
        noEcho(text);
      }
      expect(store.created).toBe(before);
      await still();
    });

    it("Connect JSON, gRPC+json and gRPC-Web+json: INVALID_ARGUMENT for 100 000 levels and for junk, in our words", async () => {
      const before = store.created;
      for (const body of [
        `{"message":${deep}}`,
        `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":${deep}}]}}`,
        junk,
      ]) {
        for (const [path, headers] of [
          ["/a2a.v1.A2AService/SendMessage", {}],
          ["/lf.a2a.v1.A2AService/SendMessage", v10],
        ] as const) {
          const connect = await post(path, body, headers);
          const text = await connect.text();
          expect(connect.status, text.slice(0, 200)).toBe(400);
          expect((JSON.parse(text) as Obj)["code"]).toBe("invalid_argument");
          noEcho(text);
          const grpc = await grpcRaw(path, grpcFrame(Buffer.from(body)), {
            "content-type": "application/grpc+json",
            ...(path.startsWith("/lf.") ? { "a2a-version": "1.0" } : {}),
          });
          expect(grpc.status, grpc.message).toBe("3");
          expect(grpc.message).toMatch(/nested too deeply|not valid JSON/);
          noEcho(grpc.message);
          const web = await post(path, grpcFrame(Buffer.from(body)), {
            "content-type": "application/grpc-web+json",
            ...headers,
          });
          const trailer = decodeURIComponent(Buffer.from(await web.arrayBuffer()).toString("latin1"));
          expect(trailer).toMatch(/grpc-status: ?3\b/);
          noEcho(trailer);
        }
      }
      expect(store.created).toBe(before);
      await still();
    });

    it("binary protobuf nested 40 000 levels: INVALID_ARGUMENT on Connect, gRPC and gRPC-Web, without the parser's text", async () => {
      const before = store.created;
      const bin = deepBinaryRequest(40_000);
      expect(bin.length).toBeLessThan(1024 * 1024);
      const path = "/lf.a2a.v1.A2AService/SendMessage";
      const connect = await post(path, bin, { "content-type": "application/proto", ...v10 });
      expect(connect.status).toBe(400);
      const text = await connect.text();
      expect((JSON.parse(text) as Obj)["code"]).toBe("invalid_argument");
      noEcho(text);
      const grpc = await grpcRaw(path, grpcFrame(bin), { "a2a-version": "1.0" });
      expect(grpc.status).toBe("3");
      noEcho(grpc.message);
      expect(grpc.again).toBe("0");
      const web = await post(path, grpcFrame(bin), { "content-type": "application/grpc-web+proto", ...v10 });
      expect(Buffer.from(await web.arrayBuffer()).toString("latin1")).toMatch(/grpc-status: ?3\b/);
      expect(store.created).toBe(before);
      await still();
    });

    it("over MAX_BODY_BYTES: 413 on the HTTP bindings, RESOURCE_EXHAUSTED on Connect, gRPC and gRPC-Web, never INTERNAL", async () => {
      const before = store.created;
      const big = `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"${"a".repeat(1_100_000)}"}]}}`;
      for (const [path, headers] of [
        ["/a2a/jsonrpc", {}],
        ["/a2a/jsonrpc", v10],
        ["/v1/message:send", {}],
        ["/message:send", v10],
        ["/v1/runs", {}],
      ] as const) {
        const res = await post(path, big, headers);
        expect(res.status, path).toBe(413);
        noEcho(await res.text());
      }
      for (const [path, headers] of [
        ["/a2a.v1.A2AService/SendMessage", {}],
        ["/lf.a2a.v1.A2AService/SendMessage", v10],
      ] as const) {
        const connect = await post(path, big, headers);
        expect(connect.status).toBe(429); // Connect's HTTP status for resource_exhausted
        expect(((await connect.json()) as Obj)["code"]).toBe("resource_exhausted");
        const grpc = await grpcRaw(path, grpcFrame(Buffer.from(big)), { "content-type": "application/grpc+json" });
        expect(grpc.status).toBe("8");
        const web = await post(path, grpcFrame(Buffer.from(big)), {
          "content-type": "application/grpc-web+json",
          ...headers,
        });
        expect(Buffer.from(await web.arrayBuffer()).toString("latin1")).toMatch(/grpc-status: ?8\b/);
      }
      expect(store.created).toBe(before);
      await still();
    });
  });
});
