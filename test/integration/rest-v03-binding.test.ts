// The A2A v0.3 HTTP+JSON binding with plain fetch: ProtoJSON bodies of the a2a.v1 messages, SSE with a bare
// StreamResponse per `data:`, and `{code, message, data?}` errors with the HTTP status of the wire table.
// Plus the @a2a-js/sdk v0.3 compat REST transport picked from the card.
import { randomUUID } from "node:crypto";
import { ClientFactory, DefaultAgentCardResolver, RestTransportFactory } from "@a2a-js/sdk/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import { readSse, type SseFrame } from "../support/sse.js";
import { startTestApp, type TestApp, TEST_WORKFLOWS_DIR } from "../support/start-server.js";

const MAX_BODY_BYTES = 8192;

class CountingStore extends MemoryTaskStore {
  created = 0;
  override async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    this.created++;
    return super.create(record, events);
  }
}

type Obj = Record<string, any>;
type RestError = { code: number; message: string; data?: unknown };

describe("A2A v0.3 HTTP+JSON binding (plain fetch)", () => {
  let t: TestApp;
  let store: CountingStore;

  beforeAll(async () => {
    store = new CountingStore();
    t = await startTestApp({ WORKFLOWS_DIR: TEST_WORKFLOWS_DIR, MAX_BODY_BYTES: String(MAX_BODY_BYTES) }, store);
  });
  afterAll(() => t?.close());

  const url = (path: string) => `${t.baseUrl}${path}`;
  const postJson = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(url(path), {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const message = (text: string, extra: Obj = {}): Obj => ({
    messageId: randomUUID(),
    role: "ROLE_USER",
    content: [{ text }],
    ...extra,
  });
  const reply = (taskId: string, data: Obj): Obj => ({
    messageId: randomUUID(),
    role: "ROLE_USER",
    taskId,
    content: [{ data: { data } }],
  });
  const sse = async (res: Response, until?: (f: SseFrame) => boolean): Promise<Obj[]> => {
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    return (await readSse(res, until)).map((f) => {
      expect(f.event).toBeUndefined();
      return f.data as Obj;
    });
  };
  const states = (events: Obj[]) =>
    events.filter((e) => e["statusUpdate"]).map((e) => e["statusUpdate"]["status"]["state"]);
  const expectError = async (res: Response, status: number, code: number): Promise<RestError> => {
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = (await res.json()) as RestError;
    expect(body.code).toBe(code);
    expect(typeof body.message).toBe("string");
    return body;
  };
  async function waitingTask(): Promise<string> {
    const res = await postJson("/v1/message:send", {
      message: message("Ship it", { metadata: { skillId: "approval-gate" } }),
    });
    const body = (await res.json()) as Obj;
    expect(body["task"]["status"]["state"]).toBe("TASK_STATE_INPUT_REQUIRED");
    return body["task"]["id"] as string;
  }

  it("POST /v1/message:send answers {task} in ProtoJSON", async () => {
    const res = await postJson("/v1/message:send", {
      message: message("hello rest", { metadata: { skillId: "echo" } }),
      configuration: { blocking: true, historyLength: 0 },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = (await res.json()) as Obj;
    expect(Object.keys(body)).toEqual(["task"]);
    const task = body["task"];
    expect(task["status"]["state"]).toBe("TASK_STATE_COMPLETED");
    expect(task["status"]["timestamp"]).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    expect(task["artifacts"][0]["parts"][0]).toEqual({ text: "hello rest" });
    expect(task["history"][0]).toMatchObject({ role: "ROLE_USER", content: [{ text: "hello rest" }] });
    expect(task).not.toHaveProperty("kind");
  });

  it("POST /v1/message:stream sends one bare StreamResponse per SSE data line", async () => {
    const res = await postJson("/v1/message:stream", {
      message: message("Ship it", { metadata: { skillId: "approval-gate" } }),
    });
    const events = await sse(res);
    for (const e of events) expect(Object.keys(e)).toHaveLength(1);
    expect(Object.keys(events[0]!)).toEqual(["task"]);
    expect(events[0]!["task"]["status"]["state"]).toBe("TASK_STATE_SUBMITTED");
    expect(states(events)).toEqual(["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]);
    expect(events.at(-1)!["statusUpdate"]["final"]).toBe(true);
    expect(events.filter((e) => e["artifactUpdate"]).map((e) => e["artifactUpdate"]["artifact"]["name"])).toEqual([
      "proposal",
    ]);
    expect(events.some((e) => "jsonrpc" in e || "result" in e)).toBe(false);
  });

  it("GET /v1/tasks/{id} with historyLength; POST :cancel cancels a waiting task, then 409", async () => {
    const taskId = await waitingTask();
    const full = (await (await fetch(url(`/v1/tasks/${taskId}`))).json()) as Obj;
    expect(full["id"]).toBe(taskId);
    expect(full["status"]["state"]).toBe("TASK_STATE_INPUT_REQUIRED");
    const zero = (await (await fetch(url(`/v1/tasks/${taskId}?historyLength=0`))).json()) as Obj;
    expect(zero["history"]).toEqual(full["history"]);
    const one = (await (await fetch(url(`/v1/tasks/${taskId}?historyLength=1`))).json()) as Obj;
    expect(one["history"]).toHaveLength(1);
    await expectError(await fetch(url(`/v1/tasks/${taskId}?historyLength=-1`)), 400, -32602);

    // No body at all (as the a2a-js client sends it), then a body naming the task.
    const cancelled = await fetch(url(`/v1/tasks/${taskId}:cancel`), { method: "POST" });
    expect(cancelled.status).toBe(200);
    expect(((await cancelled.json()) as Obj)["status"]["state"]).toBe("TASK_STATE_CANCELLED");
    await expectError(await postJson(`/v1/tasks/${taskId}:cancel`, { name: `tasks/${taskId}` }), 409, -32002);
    await expectError(await postJson(`/v1/tasks/${taskId}:cancel`, { name: "tasks/other" }), 400, -32602);
  });

  it("GET and POST /v1/tasks/{id}:subscribe re-attach to a running task and stay open through its interrupt; approval completes it on the same streams", async () => {
    const first = await postJson("/v1/message:stream", {
      message: message("Deploy", { metadata: { skillId: "slow-approval" } }),
    });
    const [created] = await sse(first, () => true); // drop the stream after the Task
    const taskId = created!["task"]["id"] as string;

    // Both subscriptions stay open through the interrupt; once both show the task waiting, one reply, and
    // both watch it run to completed.
    let waiting = 0;
    let approved: Promise<Response> | undefined;
    const watch = (res: Response) => {
      let seen = false;
      return sse(res, (f) => {
        const e = f.data as Obj;
        const state = e["task"]?.["status"]?.["state"] ?? e["statusUpdate"]?.["status"]?.["state"];
        if (state === "TASK_STATE_INPUT_REQUIRED" && !seen && (seen = true) && ++waiting === 2) {
          approved = postJson("/v1/message:send", { message: reply(taskId, { action: "accept" }) });
        }
        return false;
      });
    };
    const [viaGet, viaPost] = await Promise.all([
      watch(await fetch(url(`/v1/tasks/${taskId}:subscribe`))),
      watch(await fetch(url(`/v1/tasks/${taskId}:subscribe`), { method: "POST" })),
    ]);
    for (const events of [viaGet, viaPost]) {
      expect(events[0]!["task"]["id"]).toBe(taskId);
      expect(states(events).at(-1)).toBe("TASK_STATE_COMPLETED");
    }
    expect((await approved!).status).toBe(200);
    const after = await sse(await postJson(`/v1/tasks/${taskId}:subscribe`, { name: `tasks/${taskId}` }));
    expect(after.map((e) => e["task"]?.["status"]?.["state"])).toEqual(["TASK_STATE_COMPLETED"]);
  });

  it("GET /v1/card is the ProtoJSON agent card", async () => {
    const card = (await (await fetch(url("/v1/card"))).json()) as Obj;
    expect(card["name"]).toBe("OpenWOP A2A host");
    expect(card["protocolVersion"]).toBe("0.3.0");
    expect(card["additionalInterfaces"]).toContainEqual({ url: t.baseUrl, transport: "HTTP+JSON" });
    expect(card["skills"].map((s: Obj) => s["id"])).toEqual(expect.arrayContaining(["echo", "approval-gate"]));
    const wellKnown = (await (await fetch(url("/.well-known/agent-card.json"))).json()) as Obj;
    expect(wellKnown["preferredTransport"]).toBe("JSONRPC");
    expect(wellKnown["additionalInterfaces"].map((i: Obj) => i["transport"])).toEqual(["JSONRPC", "GRPC", "HTTP+JSON"]);
    const discovery = (await (await fetch(url("/.well-known/openwop"))).json()) as Obj;
    expect(discovery["supportedTransports"]).toEqual(["rest", "a2a", "grpc"]);
  });

  it("push-config paths: create (201), get, list, delete; a refused URL is 400 naming the arm, before the task is looked up", async () => {
    const sent = (await (
      await postJson("/v1/message:send", { message: message("Ship it", { metadata: { skillId: "approval-gate" } }) })
    ).json()) as Obj;
    const id = sent["task"]["id"] as string;
    const hook = "https://93.184.215.14/hook"; // literal public address: no DNS needed, nothing delivered while the task waits
    const created = await postJson(`/v1/tasks/${id}/pushNotificationConfigs`, {
      parent: `tasks/${id}`,
      configId: "c1",
      config: { pushNotificationConfig: { url: hook, token: "rest-token" } },
    });
    expect(created.status).toBe(201);
    // The token is write-only: not in the answer.
    expect(await created.json()).toEqual({
      name: `tasks/${id}/pushNotificationConfigs/c1`,
      pushNotificationConfig: { id: "c1", url: hook },
    });
    // A bare TaskPushNotificationConfig body (the proto's body: "config") works too; the id defaults to the task id.
    expect(
      (await postJson(`/v1/tasks/${id}/pushNotificationConfigs`, { pushNotificationConfig: { url: hook } })).status,
    ).toBe(201);
    const got = (await (await fetch(url(`/v1/tasks/${id}/pushNotificationConfigs/c1`))).json()) as Obj;
    expect(got["pushNotificationConfig"]).toEqual({ id: "c1", url: hook });
    const listed = (await (await fetch(url(`/v1/tasks/${id}/pushNotificationConfigs`))).json()) as Obj;
    expect(listed["configs"].map((c: Obj) => c["name"])).toEqual([
      `tasks/${id}/pushNotificationConfigs/c1`,
      `tasks/${id}/pushNotificationConfigs/${id}`,
    ]);
    expect((await fetch(url(`/v1/tasks/${id}/pushNotificationConfigs/c1`), { method: "DELETE" })).status).toBe(200);
    await expectError(await fetch(url(`/v1/tasks/${id}/pushNotificationConfigs/c1`)), 404, -32001);

    for (const [bad, arm] of [
      ["https://10.0.0.5/push", "address"],
      ["http://push.example.com/push", "scheme"],
    ] as const) {
      const unknown = randomUUID();
      const refused = await expectError(
        await postJson(`/v1/tasks/${unknown}/pushNotificationConfigs`, {
          config: { pushNotificationConfig: { url: bad } },
        }),
        400,
        -32602,
      );
      expect(refused.message, bad).toContain(`refused by the ${arm} arm`);
      expect((refused.data as Obj)["arm"], bad).toBe(arm);
    }
    await expectError(
      await postJson(`/v1/tasks/${randomUUID()}/pushNotificationConfigs`, {
        config: { pushNotificationConfig: { url: hook } },
      }),
      404,
      -32001,
    );
    await expectError(
      await postJson(`/v1/tasks/${id}/pushNotificationConfigs`, {
        parent: "tasks/other",
        config: { pushNotificationConfig: { url: hook } },
      }),
      400,
      -32602,
    );
  });

  it("rejects bad input with clear errors, creates nothing, and keeps serving", async () => {
    const before = store.created;
    const missing = await expectError(await fetch(url(`/v1/tasks/${randomUUID()}`)), 404, -32001);
    expect(missing.message).toMatch(/not found/i);
    await expectError(await fetch(url(`/v1/tasks/${randomUUID()}:subscribe`)), 404, -32001);
    await expectError(await fetch(url(`/v1/tasks/${randomUUID()}:cancel`), { method: "POST" }), 404, -32001);

    const good = JSON.stringify({ message: message("hi", { metadata: { skillId: "echo" } }) });
    await expectError(
      await fetch(url("/v1/message:send"), { method: "POST", headers: { "content-type": "text/plain" }, body: good }),
      415,
      -32600,
    );
    await expectError(await fetch(url("/v1/message:stream"), { method: "POST", body: good }), 415, -32600);
    await expectError(
      await postJson("/v1/message:send", { message: message("x".repeat(MAX_BODY_BYTES)) }),
      413,
      -32600,
    );
    await expectError(await postJson("/v1/message:send", "{oops"), 400, -32700);

    const jsonRpcShape = await expectError(
      await postJson("/v1/message:send", {
        message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "text", text: "hi" }] },
      }),
      400,
      -32602,
    );
    expect(jsonRpcShape.message).toMatch(/Role/); // `kind` and `parts` are ignored as unknown; "user" is no proto enum name
    const wrongEnum = await expectError(
      await postJson("/v1/message:send", { message: message("hi", { role: "ROLE_ADMIN" }) }),
      400,
      -32602,
    );
    expect(wrongEnum.message).toContain("ROLE_ADMIN");
    const noRole = await expectError(
      await postJson("/v1/message:send", { message: { messageId: "m", content: [{ text: "hi" }] } }),
      400,
      -32602,
    );
    expect(noRole.message).toContain("message.role");
    const noParts = await expectError(
      await postJson("/v1/message:stream", { message: { messageId: "m", role: "ROLE_USER", content: [] } }),
      400,
      -32602,
    );
    expect(noParts.message).toContain("message.content");
    await expectError(await postJson("/v1/message:send", {}), 400, -32602);
    await expectError(
      await postJson("/v1/message:send", { message: message("hi", { metadata: { skillId: "nope" } }) }),
      400,
      -32602,
    );
    expect(store.created).toBe(before);

    const method = await fetch(url("/v1/message:send"));
    expect(method.status).toBe(405);
    const health = await fetch(url("/healthz"));
    expect(health.status).toBe(200);
    const ok = await postJson("/v1/message:send", { message: message("still up", { metadata: { skillId: "echo" } }) });
    expect(((await ok.json()) as Obj)["task"]["status"]["state"]).toBe("TASK_STATE_COMPLETED");
  });

  it("the @a2a-js/sdk v0.3 compat REST transport, chosen from the card, sends, gets and streams", async () => {
    const factory = new ClientFactory({
      transports: [new RestTransportFactory({ legacyCompat: { enabled: true } })],
      preferredTransports: ["HTTP+JSON"],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
    });
    // The card lists every binding for 1.0 and for 0.3, and the SDK prefers 1.0: keep its 0.3 interfaces.
    const card = await new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }).resolve(t.baseUrl);
    const sdk = await factory.createFromAgentCard({
      ...card,
      supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion === "0.3"),
    });
    expect(sdk.protocolVersion).toBe("0.3");
    const send = (text: string, skillId: string) => ({
      tenant: "",
      message: {
        messageId: randomUUID(),
        contextId: "",
        taskId: "",
        role: 1,
        parts: [{ content: { $case: "text" as const, value: text }, metadata: undefined, filename: "", mediaType: "" }],
        metadata: { skillId },
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    });
    const result = await sdk.sendMessage(send("via sdk", "echo"));
    const task = "status" in result ? result : undefined;
    expect(task?.status?.state).toBe(3); // v1.0 TASK_STATE_COMPLETED
    expect(task?.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: "via sdk" });
    const again = await sdk.getTask({ tenant: "", id: task!.id, historyLength: undefined });
    expect(again.id).toBe(task!.id);

    const kinds: string[] = [];
    for await (const event of sdk.sendMessageStream(send("Ship it", "approval-gate")))
      kinds.push(event.payload?.$case ?? "?");
    expect(kinds[0]).toBe("task");
    expect(kinds.at(-1)).toBe("statusUpdate");
  });
});
