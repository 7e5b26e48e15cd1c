// OpenWOP v2 interop.md "Isolation" (openwop/openwop 2549b715): on A2A, a task the caller could not read is answered
// exactly as a nonexistent one. For each A2A operation that names a task, the answer to another tenant's task is
// compared, byte for byte once the id is blanked, with the answer to an id that was never used; and the task is
// unchanged afterwards.
import { randomUUID } from "node:crypto";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { A2AService } from "../../src/gen/a2a/v1/a2a_pb.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];
const KEYS = { alice: "alice-key-0123456789abcdef", bob: "bob-key-0123456789abcdef" };

interface Answer {
  status: number;
  contentType: string | null;
  body: string;
}

describe("A2A: a task the caller cannot read is answered exactly as a missing one", () => {
  let t: TestApp;
  let taskId: string;
  beforeAll(async () => {
    t = await startTestApp({
      API_KEYS: JSON.stringify([
        { id: "alice", tenant: "acme", scopes: ALL, key: KEYS.alice },
        { id: "bob", tenant: "globex", scopes: ALL, key: KEYS.bob },
      ]),
    });
    const created = await post("/a2a/jsonrpc", KEYS.alice, {
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: "hi" }],
          metadata: { skillId: "approval-gate" },
        },
      },
    });
    taskId = (JSON.parse(created.body) as { result: { id: string } }).result.id;
  });
  afterAll(() => t.close());

  async function post(path: string, key: string, body: unknown, headers: Record<string, string> = {}) {
    return answer(
      await fetch(`${t.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...headers },
        body: JSON.stringify(body),
      }),
    );
  }
  async function get(path: string, key: string) {
    return answer(await fetch(`${t.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } }));
  }
  async function answer(res: Response): Promise<Answer> {
    return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
  }

  /** `ask(id)` as bob for alice's task and for a never-used id: the same answer, the id blanked. */
  async function expectSameAsMissing(ask: (id: string) => Promise<Answer>) {
    const missing = randomUUID();
    const [theirs, nothing] = [await ask(taskId), await ask(missing)];
    expect({ ...theirs, body: theirs.body.replaceAll(taskId, "<id>") }).toEqual({
      ...nothing,
      body: nothing.body.replaceAll(missing, "<id>"),
    });
    return theirs;
  }

  const rpc03 = (method: string, params: (id: string) => unknown) => (id: string) =>
    post("/a2a/jsonrpc", KEYS.bob, { jsonrpc: "2.0", id: 9, method, params: params(id) });
  const rpc10 = (method: string, params: (id: string) => unknown) => (id: string) =>
    post("/a2a/jsonrpc", KEYS.bob, { jsonrpc: "2.0", id: 9, method, params: params(id) }, { "A2A-Version": "1.0" });
  const reply = (id: string) => ({
    message: {
      kind: "message",
      messageId: "fixed-message-id",
      role: "user",
      taskId: id,
      parts: [{ kind: "data", data: { action: "accept" } }],
    },
  });
  const webhook = { url: "https://93.184.216.34/a2a", token: "push-token-0123456789" };

  it("over JSON-RPC 0.3: get, cancel, a reply, resubscribe and each push-config method", async () => {
    const cases: Array<[string, (id: string) => unknown]> = [
      ["tasks/get", (id) => ({ id })],
      ["tasks/cancel", (id) => ({ id })],
      ["message/send", reply],
      ["message/stream", reply],
      ["tasks/resubscribe", (id) => ({ id })],
      ["tasks/pushNotificationConfig/set", (id) => ({ taskId: id, pushNotificationConfig: webhook })],
      ["tasks/pushNotificationConfig/get", (id) => ({ id })],
      ["tasks/pushNotificationConfig/list", (id) => ({ id })],
      ["tasks/pushNotificationConfig/delete", (id) => ({ id, pushNotificationConfigId: "c1" })],
    ];
    for (const [method, params] of cases) {
      const theirs = await expectSameAsMissing(rpc03(method, params));
      expect(theirs.body, method).toContain("-32001");
    }
  });

  it("over JSON-RPC 1.0: GetTask, CancelTask, SendMessage, SubscribeToTask and the push-config methods", async () => {
    const reply10 = (id: string) => ({
      message: {
        messageId: "fixed-message-id",
        role: "ROLE_USER",
        taskId: id,
        parts: [{ data: { action: "accept" } }],
      },
    });
    const cases: Array<[string, (id: string) => unknown]> = [
      ["GetTask", (id) => ({ id })],
      ["CancelTask", (id) => ({ id })],
      ["SendMessage", reply10],
      ["SubscribeToTask", (id) => ({ id })],
      ["CreateTaskPushNotificationConfig", (id) => ({ taskId: id, url: webhook.url, token: webhook.token })],
      ["GetTaskPushNotificationConfig", (id) => ({ taskId: id, id: "c1" })],
      ["ListTaskPushNotificationConfigs", (id) => ({ taskId: id })],
      ["DeleteTaskPushNotificationConfig", (id) => ({ taskId: id, id: "c1" })],
    ];
    for (const [method, params] of cases) {
      const theirs = await expectSameAsMissing(rpc10(method, params));
      expect(theirs.body, method).toContain("-32001");
    }
  });

  it("over HTTP+JSON: read, cancel, subscribe and the push configs", async () => {
    const asks: Array<(id: string) => Promise<Answer>> = [
      (id) => get(`/v1/tasks/${id}`, KEYS.bob),
      (id) => post(`/v1/tasks/${id}:cancel`, KEYS.bob, {}),
      (id) => get(`/v1/tasks/${id}:subscribe`, KEYS.bob),
      (id) => get(`/v1/tasks/${id}/pushNotificationConfigs`, KEYS.bob),
      (id) => get(`/v1/tasks/${id}/pushNotificationConfigs/c1`, KEYS.bob),
    ];
    for (const ask of asks) expect((await expectSameAsMissing(ask)).status).toBe(404);
  });

  it("over gRPC: the same status and message", async () => {
    const grpc = createClient(
      A2AService,
      createGrpcTransport({
        baseUrl: t.baseUrl,
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${KEYS.bob}`);
            return next(req);
          },
        ],
      }),
    );
    const failure = async (call: Promise<unknown>): Promise<Answer> => {
      const err = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConnectError);
      const e = err as ConnectError;
      return { status: e.code, contentType: null, body: e.rawMessage };
    };
    const streamed = async (id: string) => {
      for await (const _ of grpc.taskSubscription({ name: `tasks/${id}` })) break;
    };
    await expectSameAsMissing((id) => failure(grpc.getTask({ name: `tasks/${id}` })));
    await expectSameAsMissing((id) => failure(grpc.cancelTask({ name: `tasks/${id}` })));
    await expectSameAsMissing((id) => failure(streamed(id)));
  });

  it("leaves the task as it was", async () => {
    const read = await post("/a2a/jsonrpc", KEYS.alice, {
      jsonrpc: "2.0",
      id: 2,
      method: "tasks/get",
      params: { id: taskId },
    });
    const task = (JSON.parse(read.body) as { result: { status: { state: string }; history?: unknown[] } }).result;
    expect(task.status.state).toBe("input-required");
    const configs = await post("/a2a/jsonrpc", KEYS.alice, {
      jsonrpc: "2.0",
      id: 3,
      method: "tasks/pushNotificationConfig/list",
      params: { id: taskId },
    });
    expect(JSON.parse(configs.body)).toMatchObject({ result: [] });
  });
});
