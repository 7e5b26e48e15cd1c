// A handler that throws a plain Error (not a HandlerError) may have a secret in its text (a driver's
// "connect failed: password=…"). That text reaches no caller on any binding, nor the stored task: callers
// see a generic message with a correlation id, and the log has the full text and stack under that id. A
// HandlerError's message is written for callers and still reaches them.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { connect, type ClientHttp2Session } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import * as v03pb from "../../src/gen/a2a/v1/a2a_pb.js";
import * as v10pb from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { createLogger } from "../../src/observability/logger.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { HandlerError, type TaskHandler } from "../../src/workflows/workflow-types.js";
import { rawRpc } from "../support/raw-rpc.js";
import { freePort } from "../support/server-process.js";

type Obj = Record<string, any>;
const KEY = "handler-errors-key-0123456789";
const SCOPES = [
  "runs:create",
  "runs:read",
  "runs:cancel",
  "approvals:respond",
  "webhooks:manage",
  "manifest:read",
  "console:operate",
];
const PASSWORD = `hunter2-${randomBytes(8).toString("hex")}`;
const LEAK = `connect failed: postgres://app:password=${PASSWORD}@db.internal:5432/orders`;
const CORRELATION = /correlation id ([0-9a-f-]{36})/;

const WORKFLOWS = {
  "leaky.yaml":
    "id: leaky\nname: Leaky\ndescription: Its handler throws a plain Error with a secret in it.\nnodes:\n  - { kind: task, id: connect, handler: leaky }\n",
  "leaky-stateless.yaml":
    "id: leaky-stateless\nname: Leaky, stateless\ndescription: The same, answered as a Message.\nstateless: true\nnodes:\n  - { kind: task, id: connect, handler: leaky }\n",
  "careful.yaml":
    "id: careful\nname: Careful\ndescription: Its handler throws a HandlerError meant for callers.\nnodes:\n  - { kind: task, id: connect, handler: careful }\n",
};

const leaky: TaskHandler = async () => {
  throw new Error(LEAK);
};
const careful: TaskHandler = async () => {
  throw new HandlerError("db_unavailable", "the orders database is unavailable; try again later");
};

describe("handler error text reaches callers only through HandlerError", () => {
  let app: App;
  let baseUrl: string;
  let session: ClientHttp2Session;
  const store = new MemoryTaskStore();
  const logs: string[] = [];
  const auth = { authorization: `Bearer ${KEY}` };
  const v10 = { ...auth, "a2a-version": "1.0" };

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), "handler-errors-"));
    for (const [name, body] of Object.entries(WORKFLOWS)) await writeFile(join(dir, name), body);
    const port = await freePort();
    const config = loadConfig({
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "info",
      WORKFLOWS_DIR: dir,
      BUILTIN_WORKFLOWS: "demo",
      BLOCKING_TIMEOUT_MS: "5000",
      API_KEYS: JSON.stringify([{ id: "ops", tenant: "acme", scopes: SCOPES, key: KEY }]),
    });
    app = await createApp({
      config,
      logger: createLogger(config.logLevel, { write: (line: string) => void logs.push(line) }),
      store,
      durableStore: false,
      handlers: { leaky, careful },
    });
    await app.listen();
    baseUrl = `http://127.0.0.1:${port}`;
    session = connect(baseUrl);
  });
  afterAll(async () => {
    session?.close();
    await app?.close();
  });

  async function send(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
    headers: Record<string, string> = auth,
  ): Promise<string> {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    expect(res.status, `${method} ${path}: ${text}`).toBeLessThan(300);
    return text;
  }
  const rpc = (method: string, params: unknown, headers: Record<string, string> = auth) =>
    send("POST", "/a2a/jsonrpc", { jsonrpc: "2.0", id: randomUUID(), method, params }, headers);
  const message = (skillId: string) => ({
    kind: "message",
    messageId: randomUUID(),
    role: "user",
    parts: [{ kind: "text", text: "go" }],
    metadata: { skillId },
  });

  /** Every answer that shows the task: each binding's get, the OpenWOP views, the console. */
  async function everyAnswerFor(taskId: string): Promise<Array<[string, string | Buffer]>> {
    const answers: Array<[string, string | Buffer]> = [
      ["JSON-RPC 0.3 tasks/get", await rpc("tasks/get", { id: taskId })],
      ["JSON-RPC 1.0 GetTask", await rpc("GetTask", { id: taskId }, v10)],
      ["HTTP+JSON 0.3", await send("GET", `/v1/tasks/${taskId}`)],
      ["HTTP+JSON 1.0", await send("GET", `/tasks/${taskId}`, undefined, v10)],
      ["A2ATaskState", await send("GET", `/v1/a2a/tasks/${taskId}`)],
      ["OpenWOP run", await send("GET", `/v1/runs/${taskId}`)],
      ["OpenWOP run events", await send("GET", `/v1/runs/${taskId}/events/poll`)],
      ["console task", await send("GET", `/console/api/tasks/${taskId}`)],
      ["console events", await send("GET", `/console/api/tasks/${taskId}/events`)],
    ];
    for (const wire of ["gRPC", "Connect", "gRPC-Web"] as const) {
      const v03 = await rawRpc(
        baseUrl,
        session,
        wire,
        "/a2a.v1.A2AService/GetTask",
        toBinary(v03pb.GetTaskRequestSchema, create(v03pb.GetTaskRequestSchema, { name: `tasks/${taskId}` })),
        auth,
      );
      const v10answer = await rawRpc(
        baseUrl,
        session,
        wire,
        "/lf.a2a.v1.A2AService/GetTask",
        toBinary(v10pb.GetTaskRequestSchema, create(v10pb.GetTaskRequestSchema, { id: taskId })),
        v10,
      );
      answers.push([`${wire} 0.3 GetTask`, v03.raw], [`${wire} 1.0 GetTask`, v10answer.raw]);
    }
    return answers;
  }

  const has = (raw: string | Buffer, text: string) =>
    typeof raw === "string" ? raw.includes(text) : raw.includes(Buffer.from(text, "utf8"));

  it("a plain Error: callers and the stored task see a correlation id, never its text; the log has text, stack and id", async () => {
    const sent = await rpc("message/send", { message: message("leaky") });
    const result = (JSON.parse(sent) as Obj)["result"];
    expect(result.status.state).toBe("failed");
    const taskId = result.id as string;
    const error = result.metadata.openwop.error as { code: string; message: string };
    expect(error.code).toBe("handler_error");
    expect(error.message).toMatch(CORRELATION);
    const correlationId = CORRELATION.exec(error.message)![1]!;

    const answers: Array<[string, string | Buffer]> = [
      ["JSON-RPC 0.3 message/send", sent],
      ...(await everyAnswerFor(taskId)),
    ];
    for (const [what, raw] of answers) {
      expect(has(raw, PASSWORD), `${what} carries the handler's error text`).toBe(false);
      expect(has(raw, "connect failed"), `${what} carries the handler's error text`).toBe(false);
    }
    // The correlation id is what callers get instead (the views that show the error at all).
    for (const [what, raw] of answers.filter(([what]) => !what.includes("events") && !what.includes("A2ATaskState")))
      expect(has(raw, correlationId), what).toBe(true);

    // Stored: the record and its events hold the generic message only.
    expect(JSON.stringify(await store.get(taskId))).not.toContain(PASSWORD);
    expect(JSON.stringify(await store.readEvents(taskId, 0))).not.toContain(PASSWORD);

    // The log: one error-level line with the id, the full text and the stack.
    const line = logs.map((l) => JSON.parse(l) as Obj).find((l) => l["correlationId"] === correlationId);
    expect(line).toBeDefined();
    expect(line!["level"]).toBe(50);
    expect(line!["taskId"]).toBe(taskId);
    expect(line!["err"]["message"]).toBe(LEAK);
    expect(line!["err"]["stack"]).toContain("leaky");
  });

  it("a plain Error in a stateless skill: the answering Message carries the correlation id, not the text", async () => {
    const sent = await rpc("message/send", { message: message("leaky-stateless") });
    expect(sent).not.toContain(PASSWORD);
    const result = (JSON.parse(sent) as Obj)["result"];
    expect(result.kind).toBe("message");
    const correlationId = CORRELATION.exec(result.metadata.openwop.error.message as string)![1]!;
    const line = logs.map((l) => JSON.parse(l) as Obj).find((l) => l["correlationId"] === correlationId);
    expect(line?.["err"]?.["message"]).toBe(LEAK);
    expect(line?.["level"]).toBe(50);
  });

  it("a HandlerError: its code and message still reach callers", async () => {
    const result = (JSON.parse(await rpc("message/send", { message: message("careful") })) as Obj)["result"];
    expect(result.status.state).toBe("failed");
    expect(result.metadata.openwop.error).toEqual({
      code: "db_unavailable",
      message: "the orders database is unavailable; try again later",
    });
    const run = JSON.parse(await send("GET", `/v1/runs/${result.id as string}`)) as Obj;
    expect(run["error"]).toMatchObject({
      code: "db_unavailable",
      message: "the orders database is unavailable; try again later",
    });
  });
});
