// Issue 12, items 3-7 and 11: liberal where the specs say SHOULD, strict where it matters. Unknown fields are
// ignored on every binding and both versions (wrong types still refused); a JSON-RPC request without `id` is
// answered as id null; HTTP+JSON query parameters in both spellings; a push `authentication` without schemes
// is no authentication; a body that is not UTF-8 is a parse error; a wrong Content-Type is 415 everywhere.
// Real server on a free port, real clients (fetch, connect-es, raw HTTP/2 for gRPC).
import { connect } from "node:http2";
import { randomUUID } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v03pb from "../../src/gen/a2a/v1/a2a_pb.js";
import { A2AService as V10Service } from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { randomBytes } from "node:crypto";
import { startTestApp, type TestApp, TEST_WORKFLOWS_DIR } from "../support/start-server.js";

type Obj = Record<string, any>;
type Rpc = { jsonrpc: string; id: unknown; result?: Obj; error?: { code: number; message: string } };

/** A body that is not UTF-8 (0xff never occurs in UTF-8). */
const NOT_UTF8 = Buffer.concat([Buffer.from('{"message":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);

const msg03 = (text: string, extra: Obj = {}) => ({
  kind: "message",
  messageId: randomUUID(),
  role: "user",
  parts: [{ kind: "text", text, colour: "red" }],
  metadata: { skillId: "echo" },
  ...extra,
});
const msg10 = (text: string, extra: Obj = {}) => ({
  messageId: randomUUID(),
  role: "ROLE_USER",
  parts: [{ text, colour: "red" }],
  metadata: { skillId: "echo" },
  ...extra,
});
const msgProto = (text: string) => ({
  messageId: randomUUID(),
  role: "ROLE_USER",
  content: [{ text, colour: "red" }],
  metadata: { skillId: "echo" },
  flavour: 1,
});

describe("liberal input, every binding, both versions", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      WORKFLOWS_DIR: TEST_WORKFLOWS_DIR,
      PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
      PUSH_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      PUSH_SIGNING_KEY: "k".repeat(40),
    });
  });
  afterAll(() => t?.close());

  const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${t.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  async function rpc(body: unknown, headers: Record<string, string> = {}): Promise<Rpc> {
    const res = await post("/a2a/jsonrpc", JSON.stringify(body), headers);
    expect(res.status).toBe(200);
    return (await res.json()) as Rpc;
  }
  const v10 = { "A2A-Version": "1.0" };
  /** A gRPC unary call with hand-made frame bytes over a fresh HTTP/2 session. */
  async function grpcRaw(
    path: string,
    frame: Buffer,
  ): Promise<{ status: string | undefined; message: string; body: Buffer }> {
    const session = connect(t.baseUrl);
    try {
      return await new Promise((resolve, reject) => {
        const req = session.request({
          ":method": "POST",
          ":path": path,
          "content-type": "application/grpc",
          te: "trailers",
        });
        const chunks: Buffer[] = [];
        let trailers: Obj = {};
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("trailers", (h) => (trailers = h));
        req.on("end", () =>
          resolve({
            status: trailers["grpc-status"],
            message: decodeURIComponent(String(trailers["grpc-message"] ?? "")),
            body: Buffer.concat(chunks),
          }),
        );
        req.on("error", reject);
        req.end(frame);
      });
    } finally {
      session.close();
    }
  }
  const frameOf = (payload: Uint8Array, flags = 0) => {
    const out = Buffer.alloc(5 + payload.length);
    out[0] = flags;
    out.writeUInt32BE(payload.length, 1);
    Buffer.from(payload).copy(out, 5);
    return out;
  };

  it("item 3: unknown fields are ignored on JSON-RPC, HTTP+JSON, Connect JSON and gRPC binary, 0.3 and 1.0", async () => {
    // JSON-RPC 0.3: unknown members at every level (params, message, part, configuration).
    const r03 = await rpc({
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: { message: msg03("a"), configuration: { blocking: true, speed: "fast" }, extra: true },
    });
    expect(r03.result?.["status"]["state"]).toBe("completed");
    // JSON-RPC 1.0.
    const r10 = await rpc(
      { jsonrpc: "2.0", id: 2, method: "SendMessage", params: { message: msg10("b"), extra: { deep: [1] } } },
      v10,
    );
    expect(r10.result?.["task"]["status"]["state"]).toBe("TASK_STATE_COMPLETED");
    // HTTP+JSON 0.3 and 1.0.
    const rest03 = await post("/v1/message:send", JSON.stringify({ message: msgProto("c"), extra: 1 }));
    expect(rest03.status).toBe(200);
    expect(((await rest03.json()) as Obj)["task"]["status"]["state"]).toBe("TASK_STATE_COMPLETED");
    const rest10 = await post("/message:send", JSON.stringify({ message: msg10("d"), extra: 1 }), {
      "content-type": "application/a2a+json",
      ...v10,
    });
    expect(rest10.status).toBe(200);
    expect(((await rest10.json()) as Obj)["task"]["status"]["state"]).toBe("TASK_STATE_COMPLETED");
    // Connect JSON 0.3 and 1.0.
    const c03 = await post("/a2a.v1.A2AService/SendMessage", JSON.stringify({ message: msgProto("e"), bogus: 1 }));
    expect(c03.status, await c03.clone().text()).toBe(200);
    const c10 = await post("/lf.a2a.v1.A2AService/SendMessage", JSON.stringify({ message: msg10("f"), bogus: 1 }), v10);
    expect(c10.status).toBe(200);
    expect(((await c10.json()) as Obj)["task"]["status"]["state"]).toBe("TASK_STATE_COMPLETED");
    // gRPC binary: an unknown field number (99, varint) appended to a valid request.
    const known = toBinary(
      v03pb.SendMessageRequestSchema,
      create(v03pb.SendMessageRequestSchema, {
        request: {
          messageId: randomUUID(),
          role: v03pb.Role.USER,
          content: [{ part: { case: "text", value: "g" } }],
          metadata: { skillId: "echo" },
        },
      }),
    );
    const grpc = await grpcRaw(
      "/a2a.v1.A2AService/SendMessage",
      frameOf(Buffer.concat([known, Buffer.from([0x98, 0x06, 0x01])])),
    );
    expect(grpc.status).toBe("0");
  });

  it("item 3: known fields of the wrong type, and unknown enum names, are still refused on every binding", async () => {
    const r03 = await rpc({
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: { message: msg03("a", { messageId: 42 }) },
    });
    expect(r03.error?.code).toBe(-32602);
    expect(r03.error?.message).toContain("messageId");
    const r10 = await rpc(
      { jsonrpc: "2.0", id: 2, method: "SendMessage", params: { message: msg10("b", { messageId: 42 }) } },
      v10,
    );
    expect(r10.error?.code).toBe(-32602);
    const enum10 = await rpc(
      { jsonrpc: "2.0", id: 3, method: "ListTasks", params: { status: "TASK_STATE_BOGUS", extra: 1 } },
      v10,
    );
    expect(enum10.error?.code).toBe(-32602);
    expect(enum10.error?.message).toContain("TASK_STATE_BOGUS");
    expect(
      (await post("/v1/message:send", JSON.stringify({ message: { ...msgProto("c"), messageId: 42 } }))).status,
    ).toBe(400);
    const rest10 = await post("/message:send", JSON.stringify({ message: msg10("d", { role: "ROLE_BOSS" }) }), v10);
    expect(rest10.status).toBe(400);
    expect(((await rest10.json()) as Obj)["error"]["message"]).toContain("ROLE_BOSS");
    const connect = await post(
      "/lf.a2a.v1.A2AService/ListTasks",
      JSON.stringify({ status: "TASK_STATE_BOGUS", bogus: 1 }),
      v10,
    );
    expect(connect.status).toBe(400);
    expect(((await connect.json()) as Obj)["code"]).toBe("invalid_argument");
    const grpcWrongType = await createClient(V10Service, createGrpcTransport({ baseUrl: t.baseUrl }))
      .getTask({ id: "" }, { headers: v10 })
      .then(
        () => "ok",
        (e: { code: number }) => e.code,
      );
    expect(grpcWrongType).toBe(3);
  });

  it("item 4: a JSON-RPC request without id is answered as id null (0.3 and 1.0), not refused as a notification", async () => {
    const sent = await rpc({ jsonrpc: "2.0", method: "message/send", params: { message: msg03("no id") } });
    expect(sent.id).toBeNull();
    expect(sent.result?.["status"]["state"]).toBe("completed");
    const missing = await rpc({ jsonrpc: "2.0", method: "tasks/get", params: { id: randomUUID() } });
    expect(missing).toMatchObject({ id: null, error: { code: -32001 } });
    const missing10 = await rpc({ jsonrpc: "2.0", method: "GetTask", params: { id: randomUUID() } }, v10);
    expect(missing10).toMatchObject({ id: null, error: { code: -32001 } });
    const unknownMethod = await rpc({ jsonrpc: "2.0", method: "tasks/explode" });
    expect(unknownMethod).toMatchObject({ id: null, error: { code: -32601 } });
  });

  it("item 5: HTTP+JSON query parameters in both spellings; a bad, unknown or repeated one is a 400", async () => {
    const r = await rpc({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: msg03("history") } });
    const id = r.result!["id"] as string;
    const get10 = (q: string) => fetch(`${t.baseUrl}/tasks/${id}?${q}`, { headers: v10 });
    const get03 = (q: string) => fetch(`${t.baseUrl}/v1/tasks/${id}?${q}`);
    // 1.0: historyLength 0 = none, in either spelling.
    for (const q of ["historyLength=0", "history_length=0"]) {
      const res = await get10(q);
      expect(res.status, q).toBe(200);
      expect(((await res.json()) as Obj)["history"]).toEqual([]);
    }
    // 0.3: n = the last n, in either spelling.
    for (const q of ["historyLength=1", "history_length=1"]) {
      const res = await get03(q);
      expect(res.status, q).toBe(200);
      expect(((await res.json()) as Obj)["history"]).toHaveLength(1);
    }
    for (const q of ["page_size=1", "pageSize=1"]) {
      const res = await fetch(`${t.baseUrl}/tasks?${q}&include_artifacts=true`, { headers: v10 });
      expect(res.status, q).toBe(200);
      const page = (await res.json()) as Obj;
      expect(page["pageSize"]).toBe(1);
      expect(page["tasks"]).toHaveLength(1);
    }
    const bad: Array<[string, Promise<Response>]> = [
      ["1.0 not a number", get10("historyLength=abc")],
      ["1.0 both spellings", get10("historyLength=1&history_length=2")],
      ["1.0 unknown", get10("histroyLength=1")],
      ["1.0 list bad size", fetch(`${t.baseUrl}/tasks?page_size=x`, { headers: v10 })],
      ["1.0 list bad bool", fetch(`${t.baseUrl}/tasks?include_artifacts=maybe`, { headers: v10 })],
      ["0.3 not a number", get03("history_length=abc")],
      ["0.3 negative", get03("historyLength=-1")],
      ["0.3 both spellings", get03("historyLength=1&history_length=1")],
      ["0.3 unknown", get03("histroyLength=1")],
      ["0.3 push list bad size", fetch(`${t.baseUrl}/v1/tasks/${id}/pushNotificationConfigs?page_size=x`)],
      ["0.3 push get unknown", fetch(`${t.baseUrl}/v1/tasks/${id}/pushNotificationConfigs/x?page_size=1`)],
      ["0.3 subscribe unknown", fetch(`${t.baseUrl}/v1/tasks/${id}:subscribe?history_length=1`)],
      ["0.3 card unknown", fetch(`${t.baseUrl}/v1/card?pageSize=1`)],
    ];
    expect((await fetch(`${t.baseUrl}/v1/card?A2A-Version=0.3`)).status).toBe(200);
    for (const [name, pending] of bad) {
      const res = await pending;
      expect(res.status, name).toBe(400);
      expect(JSON.stringify(await res.json()), name).toMatch(/history|page|include|query/i);
    }
  });

  it("item 6: a push config whose authentication is {} or has no schemes registers with no authentication, on every binding", async () => {
    const task = await rpc({
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: { message: { ...msg03("gate"), metadata: { skillId: "approval-gate" } } },
    });
    const taskId = task.result!["id"] as string;
    const url = "http://127.0.0.1:9/hook";
    const set03 = await rpc({
      jsonrpc: "2.0",
      id: 2,
      method: "tasks/pushNotificationConfig/set",
      params: { taskId, pushNotificationConfig: { id: "a", url, authentication: {} } },
    });
    expect(set03.result?.["pushNotificationConfig"]).toEqual({ id: "a", url });
    const set03b = await rpc({
      jsonrpc: "2.0",
      id: 3,
      method: "tasks/pushNotificationConfig/set",
      params: {
        taskId,
        pushNotificationConfig: { id: "b", url, authentication: { schemes: [], credentials: "unused" } },
      },
    });
    expect(set03b.result?.["pushNotificationConfig"]).toEqual({ id: "b", url });
    const set10 = await rpc(
      {
        jsonrpc: "2.0",
        id: 4,
        method: "CreateTaskPushNotificationConfig",
        params: { taskId, id: "c", url, authentication: {} },
      },
      v10,
    );
    expect(set10.result).toMatchObject({ id: "c", taskId, url });
    expect(set10.result?.["authentication"]).toBeUndefined();
    const rest03 = await post(
      `/v1/tasks/${taskId}/pushNotificationConfigs`,
      JSON.stringify({ configId: "d", config: { pushNotificationConfig: { url, authentication: { schemes: [] } } } }),
    );
    expect(rest03.status).toBe(201);
    expect(((await rest03.json()) as Obj)["pushNotificationConfig"]["authentication"]).toBeUndefined();
    const rest10 = await post(
      `/tasks/${taskId}/pushNotificationConfigs`,
      JSON.stringify({ id: "e", url, authentication: { scheme: "" } }),
      v10,
    );
    expect(rest10.status).toBe(200);
    expect(((await rest10.json()) as Obj)["authentication"]).toBeUndefined();
    const connect03 = await post(
      "/a2a.v1.A2AService/CreateTaskPushNotificationConfig",
      JSON.stringify({
        parent: `tasks/${taskId}`,
        configId: "f",
        config: { pushNotificationConfig: { url, authentication: {} } },
      }),
    );
    expect(connect03.status).toBe(200);
    const list = await rpc({
      jsonrpc: "2.0",
      id: 5,
      method: "tasks/pushNotificationConfig/list",
      params: { id: taskId },
    });
    const configs = list.result as unknown as Obj[];
    expect(configs.map((c) => c["pushNotificationConfig"]["id"]).sort()).toEqual(["a", "b", "c", "d", "e", "f"]);
    for (const c of configs) expect(c["pushNotificationConfig"]["authentication"]).toBeUndefined();
    // A real scheme still registers with its authentication (the credentials are write-only: not in the answer).
    const withScheme = await rpc({
      jsonrpc: "2.0",
      id: 6,
      method: "tasks/pushNotificationConfig/set",
      params: {
        taskId,
        pushNotificationConfig: { id: "g", url, authentication: { schemes: ["Bearer"], credentials: "c" } },
      },
    });
    expect(withScheme.result?.["pushNotificationConfig"]["authentication"]).toEqual({ schemes: ["Bearer"] });
  });

  it("item 7: a JSON body that is not valid UTF-8 is a parse error on every binding, never decoded lossily", async () => {
    const rpcRes = await post("/a2a/jsonrpc", NOT_UTF8);
    expect(rpcRes.status).toBe(200);
    expect(((await rpcRes.json()) as Rpc).error).toMatchObject({
      code: -32700,
      message: expect.stringContaining("UTF-8"),
    });
    const rest03 = await post("/v1/message:send", NOT_UTF8);
    expect(rest03.status).toBe(400);
    expect(((await rest03.json()) as Obj)["code"]).toBe(-32700);
    const rest10 = await post("/message:send", NOT_UTF8, v10);
    expect(rest10.status).toBe(400);
    expect(((await rest10.json()) as Obj)["error"]["message"]).toContain("UTF-8");
    const runs = await post("/v1/runs", NOT_UTF8);
    expect(runs.status).toBe(400);
    expect(((await runs.json()) as Obj)["error"]).toBe("validation_error");
    for (const path of ["/a2a.v1.A2AService/SendMessage", "/lf.a2a.v1.A2AService/SendMessage"]) {
      const res = await post(path, NOT_UTF8, v10);
      expect(res.status, path).toBe(400);
      expect(((await res.json()) as Obj)["code"], path).toBe("invalid_argument");
    }
  });

  it("item 11: a wrong Content-Type is 415 on every HTTP binding (A2A's ContentTypeNotSupported is about parts: 400)", async () => {
    const body = JSON.stringify({ message: msg10("x") });
    const rpcRes = await post(
      "/a2a/jsonrpc",
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "x" } }),
      { "content-type": "text/plain" },
    );
    expect(rpcRes.status).toBe(415);
    expect(((await rpcRes.json()) as Rpc).error?.code).toBe(-32600);
    const rest03 = await post("/v1/message:send", body, { "content-type": "text/plain" });
    expect(rest03.status).toBe(415);
    expect(((await rest03.json()) as Obj)["code"]).toBe(-32600);
    const rest10 = await post("/message:send", body, { "content-type": "text/plain", ...v10 });
    expect(rest10.status).toBe(415);
    expect(rest10.headers.get("content-type")).toContain("application/a2a+json");
    expect(((await rest10.json()) as Obj)["error"]).toMatchObject({ code: 415, status: "INVALID_ARGUMENT" });
    const runs = await post("/v1/runs", JSON.stringify({ workflowId: "conformance-noop" }), {
      "content-type": "text/plain",
    });
    expect(runs.status).toBe(415);
    expect(((await runs.json()) as Obj)["error"]).toBe("unsupported_media_type");
  });
});
