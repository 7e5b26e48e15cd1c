// Push secrets are write-only (OpenWOP RFC 0214 §A: a push credential enters no response): on every binding a
// config created with a token and credentials answers create, get and list without either (checked on the raw
// bytes of each answer, not on a parsed field), while the webhook on loopback still receives both.
import { randomBytes, randomUUID } from "node:crypto";
import { connect, type ClientHttp2Session } from "node:http2";
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v03pb from "../../src/gen/a2a/v1/a2a_pb.js";
import * as v10pb from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { PushReceiver, waitFor } from "../support/push-receiver.js";
import { rawRpc, type Wire } from "../support/raw-rpc.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
const V10 = { "a2a-version": "1.0" };

describe("push config secrets are write-only on every binding", () => {
  let t: TestApp;
  let hook: PushReceiver;
  let session: ClientHttp2Session;
  beforeAll(async () => {
    hook = await new PushReceiver().start();
    t = await startTestApp({
      PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
      PUSH_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      PUSH_SIGNING_KEY: randomBytes(32).toString("hex"),
      PUSH_RETRY_BASE_MS: "30",
      PUSH_RETRY_MAX_MS: "150",
    });
    session = connect(t.baseUrl);
  });
  afterAll(async () => {
    session?.close();
    await t?.close();
    await hook?.stop();
  });

  const secrets = () => ({
    token: `tok-${randomBytes(12).toString("hex")}`,
    credentials: `cred-${randomBytes(12).toString("hex")}`,
  });

  async function post(
    path: string,
    body: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; text: string }> {
    const res = await fetch(`${t.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  }
  async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
    const res = await fetch(`${t.baseUrl}${path}`, { headers });
    return { status: res.status, text: await res.text() };
  }
  const rpc = (method: string, params: unknown, headers: Record<string, string> = {}) =>
    post("/a2a/jsonrpc", { jsonrpc: "2.0", id: randomUUID(), method, params }, headers);

  /** An approval-gate task paused at input-required (optionally with an inline config); answers its id and the raw answer. */
  async function startTask(push?: Obj): Promise<{ taskId: string; text: string }> {
    const message = {
      kind: "message",
      messageId: randomUUID(),
      role: "user",
      parts: [{ kind: "text", text: "Send the report" }],
      metadata: { skillId: "approval-gate" },
    };
    const sent = await rpc("message/send", {
      message,
      ...(push ? { configuration: { pushNotificationConfig: push } } : {}),
    });
    const body = JSON.parse(sent.text) as Obj;
    expect(body["result"]?.status?.state, sent.text).toBe("input-required");
    return { taskId: body["result"].id as string, text: sent.text };
  }

  /** Approves the task; the webhook at `path` must then hear the completion with the token and the credentials. */
  async function expectDelivered(
    taskId: string,
    path: string,
    secret: { token: string; credentials: string },
  ): Promise<void> {
    const accept = {
      kind: "message",
      messageId: randomUUID(),
      role: "user",
      taskId,
      parts: [{ kind: "data", data: { action: "accept" } }],
    };
    expect(JSON.parse((await rpc("message/send", { message: accept })).text).result.status.state).toBe("completed");
    await expectHeard(path, secret);
  }

  async function expectHeard(path: string, secret: { token: string; credentials: string }): Promise<void> {
    const completed = (h: (typeof hook.hits)[number]) =>
      h.json["status"]?.state === "completed" || h.json["statusUpdate"]?.status?.state === "TASK_STATE_COMPLETED";
    const hit = await waitFor(
      () => hook.hits.find((h) => h.path === path && completed(h)),
      10_000,
      `the completed push to ${path}`,
    );
    expect(hit.headers["x-a2a-notification-token"]).toBe(secret.token);
    expect(hit.headers["authorization"]).toBe(`Bearer ${secret.credentials}`);
  }

  function expectNoSecret(raw: string | Buffer, secret: { token: string; credentials: string }, what: string): void {
    const bytes = typeof raw === "string" ? Buffer.from(raw, "utf8") : raw;
    expect(bytes.includes(secret.token), `${what} carries the token`).toBe(false);
    expect(bytes.includes(secret.credentials), `${what} carries the credentials`).toBe(false);
  }

  it("JSON-RPC 0.3: set / get / list, and an inline config on message/send", async () => {
    const inline = secrets();
    const started = await startTask({
      url: hook.url("/jsonrpc03-inline"),
      token: inline.token,
      authentication: { schemes: ["Bearer"], credentials: inline.credentials },
    });
    expectNoSecret(started.text, inline, "message/send");
    const { taskId } = started;
    expectNoSecret((await rpc("tasks/get", { id: taskId })).text, inline, "tasks/get");
    const secret = secrets();
    const url = hook.url("/jsonrpc03");
    const set = await rpc("tasks/pushNotificationConfig/set", {
      taskId,
      pushNotificationConfig: {
        id: "c",
        url,
        token: secret.token,
        authentication: { schemes: ["Bearer"], credentials: secret.credentials },
      },
    });
    expect(JSON.parse(set.text).result).toEqual({
      taskId,
      pushNotificationConfig: { id: "c", url, authentication: { schemes: ["Bearer"] } },
    });
    const got = await rpc("tasks/pushNotificationConfig/get", { id: taskId, pushNotificationConfigId: "c" });
    expect(JSON.parse(got.text).result.pushNotificationConfig.url).toBe(url);
    const listed = await rpc("tasks/pushNotificationConfig/list", { id: taskId });
    expect(JSON.parse(listed.text).result).toHaveLength(2);
    for (const [what, answer] of [
      ["set", set],
      ["get", got],
      ["list", listed],
    ] as const) {
      expectNoSecret(answer.text, secret, what);
      expectNoSecret(answer.text, inline, what);
    }
    // The other views of the task and its configs: the console's push view, A2ATaskState, the runs API.
    for (const path of [
      `/console/api/tasks/${taskId}/push`,
      `/console/api/tasks/${taskId}`,
      `/v1/a2a/tasks/${taskId}`,
      `/v1/runs/${taskId}`,
      `/v1/runs/${taskId}/events/poll`,
    ]) {
      const view = await get(path);
      expect(view.status, `${path}: ${view.text}`).toBe(200);
      expectNoSecret(view.text, secret, path);
      expectNoSecret(view.text, inline, path);
    }
    await expectDelivered(taskId, "/jsonrpc03", secret);
    await expectHeard("/jsonrpc03-inline", inline);
    expectNoSecret(
      (await get(`/console/api/tasks/${taskId}/push`)).text,
      secret,
      "the console's push view after delivery",
    );
  });

  it("JSON-RPC 1.0: CreateTaskPushNotificationConfig / Get / List", async () => {
    const { taskId } = await startTask();
    const secret = secrets();
    const url = hook.url("/jsonrpc10");
    const created = await rpc(
      "CreateTaskPushNotificationConfig",
      {
        taskId,
        id: "c",
        url,
        token: secret.token,
        authentication: { scheme: "Bearer", credentials: secret.credentials },
      },
      V10,
    );
    expect(JSON.parse(created.text).result).toMatchObject({
      taskId,
      id: "c",
      url,
      authentication: { scheme: "Bearer" },
    });
    const got = await rpc("GetTaskPushNotificationConfig", { taskId, id: "c" }, V10);
    expect(JSON.parse(got.text).result.url).toBe(url);
    const listed = await rpc("ListTaskPushNotificationConfigs", { taskId }, V10);
    expect(JSON.parse(listed.text).result.configs).toHaveLength(1);
    for (const [what, answer] of [
      ["create", created],
      ["get", got],
      ["list", listed],
    ] as const)
      expectNoSecret(answer.text, secret, what);
    await expectDelivered(taskId, "/jsonrpc10", secret);
  });

  it("HTTP+JSON 0.3: POST / GET / GET list under /v1/tasks", async () => {
    const { taskId } = await startTask();
    const secret = secrets();
    const url = hook.url("/rest03");
    const created = await post(`/v1/tasks/${taskId}/pushNotificationConfigs`, {
      parent: `tasks/${taskId}`,
      configId: "c",
      config: {
        pushNotificationConfig: {
          url,
          token: secret.token,
          authentication: { schemes: ["Bearer"], credentials: secret.credentials },
        },
      },
    });
    expect(created.status, created.text).toBeLessThan(300);
    expect(JSON.parse(created.text)).toEqual({
      name: `tasks/${taskId}/pushNotificationConfigs/c`,
      pushNotificationConfig: { id: "c", url, authentication: { schemes: ["Bearer"] } },
    });
    const got = await get(`/v1/tasks/${taskId}/pushNotificationConfigs/c`);
    expect(JSON.parse(got.text).pushNotificationConfig.url).toBe(url);
    const listed = await get(`/v1/tasks/${taskId}/pushNotificationConfigs`);
    expect(listed.text).toContain(url);
    for (const [what, answer] of [
      ["create", created],
      ["get", got],
      ["list", listed],
    ] as const)
      expectNoSecret(answer.text, secret, what);
    await expectDelivered(taskId, "/rest03", secret);
  });

  it("HTTP+JSON 1.0: POST / GET / GET list under /tasks", async () => {
    const { taskId } = await startTask();
    const secret = secrets();
    const url = hook.url("/rest10");
    const created = await post(
      `/tasks/${taskId}/pushNotificationConfigs`,
      {
        taskId,
        id: "c",
        url,
        token: secret.token,
        authentication: { scheme: "Bearer", credentials: secret.credentials },
      },
      V10,
    );
    expect(created.status, created.text).toBeLessThan(300);
    expect(JSON.parse(created.text)).toMatchObject({ taskId, id: "c", url, authentication: { scheme: "Bearer" } });
    const got = await get(`/tasks/${taskId}/pushNotificationConfigs/c`, V10);
    expect(JSON.parse(got.text).url).toBe(url);
    const listed = await get(`/tasks/${taskId}/pushNotificationConfigs`, V10);
    expect(JSON.parse(listed.text).configs).toHaveLength(1);
    for (const [what, answer] of [
      ["create", created],
      ["get", got],
      ["list", listed],
    ] as const)
      expectNoSecret(answer.text, secret, what);
    await expectDelivered(taskId, "/rest10", secret);
  });

  // ---- the proto bindings, each answer read as the bytes on the wire --------------------------------------

  async function call<I extends DescMessage, O extends DescMessage>(
    wire: Wire,
    path: string,
    input: I,
    init: MessageInitShape<I>,
    output: O,
    headers: Record<string, string> = {},
  ): Promise<{ raw: Buffer; answer: MessageShape<O> }> {
    const { raw, message } = await rawRpc(
      t.baseUrl,
      session,
      wire,
      path,
      toBinary(input, create(input, init)),
      headers,
    );
    return { raw, answer: fromBinary(output, message) };
  }

  describe.each(["gRPC", "Connect", "gRPC-Web"] as const)("%s", (wire) => {
    it("0.3: Create / Get / List TaskPushNotificationConfig", async () => {
      const { taskId } = await startTask();
      const secret = secrets();
      const url = hook.url(`/${wire}-03`);
      const service = "/a2a.v1.A2AService";
      const created = await call(
        wire,
        `${service}/CreateTaskPushNotificationConfig`,
        v03pb.CreateTaskPushNotificationConfigRequestSchema,
        {
          parent: `tasks/${taskId}`,
          configId: "c",
          config: {
            pushNotificationConfig: {
              url,
              token: secret.token,
              authentication: { schemes: ["Bearer"], credentials: secret.credentials },
            },
          },
        },
        v03pb.TaskPushNotificationConfigSchema,
      );
      expect(created.answer.pushNotificationConfig).toMatchObject({
        id: "c",
        url,
        token: "",
        authentication: { schemes: ["Bearer"], credentials: "" },
      });
      const got = await call(
        wire,
        `${service}/GetTaskPushNotificationConfig`,
        v03pb.GetTaskPushNotificationConfigRequestSchema,
        { name: `tasks/${taskId}/pushNotificationConfigs/c` },
        v03pb.TaskPushNotificationConfigSchema,
      );
      expect(got.answer.pushNotificationConfig?.url).toBe(url);
      const listed = await call(
        wire,
        `${service}/ListTaskPushNotificationConfig`,
        v03pb.ListTaskPushNotificationConfigRequestSchema,
        { parent: `tasks/${taskId}` },
        v03pb.ListTaskPushNotificationConfigResponseSchema,
      );
      expect(listed.answer.configs.map((c) => c.pushNotificationConfig?.url)).toEqual([url]);
      for (const [what, answer] of [
        ["create", created],
        ["get", got],
        ["list", listed],
      ] as const)
        expectNoSecret(answer.raw, secret, `${wire} ${what}`);
      await expectDelivered(taskId, `/${wire}-03`, secret);
    });

    it("1.0: Create / Get / List TaskPushNotificationConfig(s)", async () => {
      const { taskId } = await startTask();
      const secret = secrets();
      const url = hook.url(`/${wire}-10`);
      const service = "/lf.a2a.v1.A2AService";
      const created = await call(
        wire,
        `${service}/CreateTaskPushNotificationConfig`,
        v10pb.TaskPushNotificationConfigSchema,
        {
          taskId,
          id: "c",
          url,
          token: secret.token,
          authentication: { scheme: "Bearer", credentials: secret.credentials },
        },
        v10pb.TaskPushNotificationConfigSchema,
        V10,
      );
      expect(created.answer).toMatchObject({
        id: "c",
        taskId,
        url,
        token: "",
        authentication: { scheme: "Bearer", credentials: "" },
      });
      const got = await call(
        wire,
        `${service}/GetTaskPushNotificationConfig`,
        v10pb.GetTaskPushNotificationConfigRequestSchema,
        { taskId, id: "c" },
        v10pb.TaskPushNotificationConfigSchema,
        V10,
      );
      expect(got.answer.url).toBe(url);
      const listed = await call(
        wire,
        `${service}/ListTaskPushNotificationConfigs`,
        v10pb.ListTaskPushNotificationConfigsRequestSchema,
        { taskId },
        v10pb.ListTaskPushNotificationConfigsResponseSchema,
        V10,
      );
      expect(listed.answer.configs.map((c) => c.url)).toEqual([url]);
      for (const [what, answer] of [
        ["create", created],
        ["get", got],
        ["list", listed],
      ] as const)
        expectNoSecret(answer.raw, secret, `${wire} ${what}`);
      await expectDelivered(taskId, `/${wire}-10`, secret);
    });
  });
});
