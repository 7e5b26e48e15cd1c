// The v0.3 gRPC binding through an independent gRPC stack: @grpc/grpc-js with @grpc/proto-loader reading
// proto/a2a/v1/a2a.proto (protobufjs underneath; nothing of protobuf-es or Connect on the client side),
// over h2c on the same port as JSON-RPC. Plus the @a2a-js/sdk v0.3 compat gRPC transport picked from the card.
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ClientFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp, TEST_WORKFLOWS_DIR } from "../support/start-server.js";

const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));

type Obj = Record<string, any>;
type Unary = (req: Obj, cb: (err: grpc.ServiceError | null, res: Obj) => void) => void;

interface A2AClient extends grpc.Client {
  [rpc: string]: any;
}

// google.protobuf.Struct as protobufjs wants it (no JSON mapping on the grpc-js side).
function struct(obj: Obj): Obj {
  return { fields: Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, value(v)])) };
}
function value(v: unknown): Obj {
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "number") return { numberValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (v === null) return { nullValue: "NULL_VALUE" };
  if (Array.isArray(v)) return { listValue: { values: v.map(value) } };
  return { structValue: struct(v as Obj) };
}
function plain(s: Obj | null | undefined): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(s?.["fields"] ?? {})) out[k] = unwrap(v as Obj);
  return out;
}
function unwrap(v: Obj): unknown {
  switch (v["kind"]) {
    case "structValue":
      return plain(v["structValue"]);
    case "listValue":
      return (v["listValue"]["values"] as Obj[]).map(unwrap);
    case "nullValue":
      return null;
    default:
      return v[v["kind"]];
  }
}

describe("A2A v0.3 over gRPC (grpc-js + proto-loader)", () => {
  let t: TestApp;
  let client: A2AClient;

  beforeAll(async () => {
    t = await startTestApp({ WORKFLOWS_DIR: TEST_WORKFLOWS_DIR });
    const definition = protoLoader.loadSync("a2a/v1/a2a.proto", {
      includeDirs: [protoDir],
      keepCase: false,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const pkg = grpc.loadPackageDefinition(definition) as any;
    client = new pkg.a2a.v1.A2AService(`127.0.0.1:${t.port}`, grpc.credentials.createInsecure()) as A2AClient;
  });
  afterAll(async () => {
    client?.close();
    await t?.close();
  });

  const call = (rpc: string, req: Obj): Promise<Obj> =>
    new Promise((resolve, reject) =>
      (client[rpc] as Unary).call(client, req, (err, res) => (err ? reject(err) : resolve(res))),
    );
  const fails = async (rpc: string, req: Obj): Promise<grpc.ServiceError> => {
    const err = await call(rpc, req).then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    if (!err) throw new Error(`${rpc} succeeded, expected an error`);
    return err;
  };
  // What grpc-js shows: grpc-message decoded as the gRPC spec says (the host encodes it so; see grpc-message.ts).
  const detail = (err: grpc.ServiceError | undefined): string => err?.details ?? "";
  const collect = async (rpc: string, req: Obj, stopAfter?: number, onEvent?: (event: Obj) => void): Promise<Obj[]> => {
    const stream = client[rpc](req) as grpc.ClientReadableStream<Obj>;
    const events: Obj[] = [];
    try {
      for await (const event of stream) {
        events.push(event as Obj);
        onEvent?.(event as Obj);
        if (stopAfter !== undefined && events.length >= stopAfter) {
          stream.cancel();
          break;
        }
      }
    } catch (err) {
      if ((err as grpc.ServiceError).code !== grpc.status.CANCELLED) throw err;
    }
    return events;
  };
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
    content: [{ data: { data: struct(data) } }],
  });
  const states = (events: Obj[]) =>
    events.filter((e) => e["payload"] === "statusUpdate").map((e) => e["statusUpdate"]["status"]["state"]);

  async function waitingTask(): Promise<string> {
    const res = await call("SendMessage", {
      request: message("Ship it", { metadata: struct({ skillId: "approval-gate" }) }),
    });
    expect(res["task"]["status"]["state"]).toBe("TASK_STATE_INPUT_REQUIRED");
    return res["task"]["id"] as string;
  }

  it("SendMessage runs the echo skill to completion with an artifact", async () => {
    const res = await call("SendMessage", {
      request: message("hello", { metadata: struct({ skillId: "echo" }) }),
      configuration: { blocking: true },
    });
    expect(res["payload"]).toBe("task");
    const task = res["task"];
    expect(task["status"]["state"]).toBe("TASK_STATE_COMPLETED");
    expect(task["status"]["timestamp"]["seconds"]).not.toBe("0");
    expect(task["artifacts"][0]["parts"][0]).toMatchObject({ part: "text", text: "hello" });
    expect(task["history"][0]).toMatchObject({ role: "ROLE_USER", taskId: task["id"], contextId: task["contextId"] });
    expect(plain(task["metadata"])["openwop"]).toMatchObject({ workflowId: "echo", status: "completed" });
  });

  it("SendStreamingMessage yields the Task first, then status updates ending at INPUT_REQUIRED", async () => {
    const events = await collect("SendStreamingMessage", {
      request: message("Ship it", { metadata: struct({ skillId: "approval-gate" }) }),
    });
    expect(events[0]!["payload"]).toBe("task");
    expect(events[0]!["task"]["status"]["state"]).toBe("TASK_STATE_SUBMITTED");
    expect(states(events)).toEqual(["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]);
    const last = events.at(-1)!;
    expect(last["payload"]).toBe("statusUpdate");
    expect(last["statusUpdate"]["final"]).toBe(true);
    expect(
      events.filter((e) => e["payload"] === "artifactUpdate").map((e) => e["artifactUpdate"]["artifact"]["name"]),
    ).toEqual(["proposal"]);
  });

  it("TaskSubscription re-attaches after the client dropped its stream; an approval then completes the task", async () => {
    const first = await collect(
      "SendStreamingMessage",
      { request: message("Deploy", { metadata: struct({ skillId: "slow-approval" }) }) },
      1,
    );
    expect(first).toHaveLength(1);
    const taskId = first[0]!["task"]["id"] as string;

    // The subscription stays open through the interrupt: reply once it shows the task waiting, watch it complete.
    let approved: Promise<Obj> | undefined;
    const resumed = await collect("TaskSubscription", { name: `tasks/${taskId}` }, undefined, (e) => {
      const state = e["payload"] === "task" ? e["task"]["status"]["state"] : e["statusUpdate"]?.["status"]["state"];
      if (!approved && state === "TASK_STATE_INPUT_REQUIRED")
        approved = call("SendMessage", { request: reply(taskId, { action: "accept" }) });
    });
    expect(resumed[0]!["payload"]).toBe("task");
    expect(resumed[0]!["task"]["id"]).toBe(taskId);
    expect(states(resumed).at(-1)).toBe("TASK_STATE_COMPLETED");
    expect(resumed.at(-1)!["statusUpdate"]["final"]).toBe(true);
    expect(resumed.filter((e) => e["statusUpdate"]?.["final"] === true)).toHaveLength(1);
    expect((await approved!)["task"]["id"]).toBe(taskId);

    // A terminal task answers its Task and closes.
    const after = await collect("TaskSubscription", { name: `tasks/${taskId}` });
    expect(after).toHaveLength(1);
    expect(after[0]!["task"]["status"]["state"]).toBe("TASK_STATE_COMPLETED");
  });

  it("GetTask reads the task; historyLength 0 means the whole history", async () => {
    const taskId = await waitingTask();
    await call("SendMessage", { request: reply(taskId, { action: "ask", question: "Which board?" }) });
    const full = await call("GetTask", { name: `tasks/${taskId}`, historyLength: 0 });
    expect(full["id"]).toBe(taskId);
    expect(full["history"].length).toBeGreaterThan(1);
    const last = await call("GetTask", { name: `tasks/${taskId}`, historyLength: 1 });
    expect(last["history"]).toHaveLength(1);
  });

  it("CancelTask cancels a waiting task; cancelling it again is FAILED_PRECONDITION", async () => {
    const taskId = await waitingTask();
    const cancelled = await call("CancelTask", { name: `tasks/${taskId}` });
    expect(cancelled["status"]["state"]).toBe("TASK_STATE_CANCELLED");
    const again = await fails("CancelTask", { name: `tasks/${taskId}` });
    expect(again.code).toBe(grpc.status.FAILED_PRECONDITION);
  });

  it("answers NOT_FOUND for an unknown task and INVALID_ARGUMENT for a malformed name", async () => {
    const missing = await fails("GetTask", { name: "tasks/nope-x" });
    expect(missing.code).toBe(grpc.status.NOT_FOUND);
    expect(missing.details).toBe("Task not found: nope-x");
    const malformed = await fails("GetTask", { name: "foo/bar" });
    expect(malformed.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(detail(malformed)).toContain("name must look like tasks/{id}");
    const cancelMalformed = await fails("CancelTask", { name: "tasks/" });
    expect(cancelMalformed.code).toBe(grpc.status.INVALID_ARGUMENT);
    const subscribeMissing = await collect("TaskSubscription", { name: "tasks/nope-stream" }).then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    expect(subscribeMissing?.code).toBe(grpc.status.NOT_FOUND);
    // A stream's status is written by connect-node, not the unary fast path: encoded the same way.
    expect(subscribeMissing?.details).toBe("Task not found: nope-stream");
  });

  it("percent-encodes grpc-message as the gRPC spec says: only bytes outside printable ASCII, and '%'", async () => {
    const id = "50%-off: café,ok";
    const missing = await fails("GetTask", { name: `tasks/${id}` });
    expect(missing.details).toBe(`Task not found: ${id}`);
  });

  it("refuses invalid messages with INVALID_ARGUMENT naming the field", async () => {
    const noMessage = await fails("SendMessage", {});
    expect(noMessage.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(detail(noMessage)).toContain("message is required");
    const noRole = await fails("SendMessage", { request: { messageId: "m1", content: [{ text: "x" }] } });
    expect(detail(noRole)).toContain("message.role");
    const noParts = await fails("SendMessage", { request: { messageId: "m1", role: "ROLE_USER", content: [] } });
    expect(detail(noParts)).toContain("message.content must be a non-empty");
    const emptyPart = await fails("SendMessage", { request: { messageId: "m1", role: "ROLE_USER", content: [{}] } });
    expect(detail(emptyPart)).toContain("message.content[0] has no content");
    const badSkill = await fails("SendMessage", { request: message("x", { metadata: struct({ skillId: "nope" }) }) });
    expect(badSkill.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(detail(badSkill)).toContain("unknown skill");
    const pushInline = await fails("SendMessage", {
      request: message("x"),
      configuration: { blocking: true, pushNotification: { url: "https://10.0.0.5/push" } },
    });
    expect(pushInline.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(detail(pushInline)).toContain("refused by the address arm");
  });

  it("push-config rpcs: create (the config id defaults to the task id), get, list, delete; a refused URL is INVALID_ARGUMENT naming the arm", async () => {
    const taskId = await waitingTask();
    // A literal public address: passes the egress guard without DNS; nothing is delivered while the task waits.
    const url = "https://93.184.215.14/hook";
    const created = await call("CreateTaskPushNotificationConfig", {
      parent: `tasks/${taskId}`,
      config: { pushNotificationConfig: { url, token: "grpc-token" } },
    });
    // The token and credentials are write-only: the answers leave them empty (proto3 defaults, not on the wire).
    expect(created).toMatchObject({
      name: `tasks/${taskId}/pushNotificationConfigs/${taskId}`,
      pushNotificationConfig: { id: taskId, url, token: "" },
    });
    await call("CreateTaskPushNotificationConfig", {
      parent: `tasks/${taskId}`,
      configId: "ops",
      config: { pushNotificationConfig: { url, authentication: { schemes: ["Bearer"], credentials: "grpc-cred" } } },
    });
    const got = await call("GetTaskPushNotificationConfig", { name: `tasks/${taskId}/pushNotificationConfigs/ops` });
    expect(got["pushNotificationConfig"]).toMatchObject({
      id: "ops",
      url,
      authentication: { schemes: ["Bearer"], credentials: "" },
    });
    const listed = await call("ListTaskPushNotificationConfig", { parent: `tasks/${taskId}` });
    expect(listed["configs"].map((c: Obj) => c["name"])).toEqual([
      `tasks/${taskId}/pushNotificationConfigs/${taskId}`,
      `tasks/${taskId}/pushNotificationConfigs/ops`,
    ]);
    await call("DeleteTaskPushNotificationConfig", { name: `tasks/${taskId}/pushNotificationConfigs/ops` });
    expect((await call("ListTaskPushNotificationConfig", { parent: `tasks/${taskId}` }))["configs"]).toHaveLength(1);
    expect(
      (await fails("GetTaskPushNotificationConfig", { name: `tasks/${taskId}/pushNotificationConfigs/ops` })).code,
    ).toBe(grpc.status.NOT_FOUND);

    // The URL is judged before the task is looked up: an unknown task still gets the arm, not NOT_FOUND.
    for (const [bad, arm] of [
      ["https://10.0.0.5/push", "address"],
      ["http://push.example.com/push", "scheme"],
    ] as const) {
      const refused = await fails("CreateTaskPushNotificationConfig", {
        parent: `tasks/${randomUUID()}`,
        config: { pushNotificationConfig: { url: bad } },
      });
      expect(refused.code, bad).toBe(grpc.status.INVALID_ARGUMENT);
      expect(detail(refused), bad).toContain(`refused by the ${arm} arm`);
    }
    expect(
      (
        await fails("CreateTaskPushNotificationConfig", {
          parent: `tasks/${randomUUID()}`,
          config: { pushNotificationConfig: { url } },
        })
      ).code,
    ).toBe(grpc.status.NOT_FOUND);
    const disagree = await fails("CreateTaskPushNotificationConfig", {
      parent: `tasks/${taskId}`,
      configId: "a",
      config: { name: `tasks/${taskId}/pushNotificationConfigs/b`, pushNotificationConfig: { url } },
    });
    expect(detail(disagree)).toContain("disagree");
    expect((await fails("GetTaskPushNotificationConfig", { name: "tasks/t1" })).code).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
    expect((await fails("ListTaskPushNotificationConfig", { parent: "x" })).code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it("GetAgentCard returns the card with skills, capabilities and all three interfaces", async () => {
    const card = await call("GetAgentCard", {});
    expect(card["protocolVersion"]).toBe("0.3.0");
    expect(card["preferredTransport"]).toBe("JSONRPC");
    expect(card["url"]).toBe(`${t.baseUrl}/a2a/jsonrpc`);
    expect(card["capabilities"]).toMatchObject({ streaming: true, pushNotifications: true });
    expect(card["capabilities"]["extensions"][0]["uri"]).toContain("openwop");
    expect(card["skills"].map((s: Obj) => s["id"])).toEqual(expect.arrayContaining(["echo", "approval-gate"]));
    expect(card["additionalInterfaces"]).toEqual([
      { url: `${t.baseUrl}/a2a/jsonrpc`, transport: "JSONRPC" },
      { url: `127.0.0.1:${t.port}`, transport: "GRPC" },
      { url: t.baseUrl, transport: "HTTP+JSON" },
    ]);
  });

  it("the @a2a-js/sdk v0.3 compat gRPC transport, chosen from the card, completes the echo skill", async () => {
    const factory = new ClientFactory({
      transports: [new GrpcTransportFactory({ legacyCompat: { enabled: true } })],
      preferredTransports: ["GRPC"],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
    });
    // The card lists every binding for 1.0 and for 0.3, and the SDK prefers 1.0: keep its 0.3 interfaces.
    const card = await new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }).resolve(t.baseUrl);
    const sdk = await factory.createFromAgentCard({
      ...card,
      supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion === "0.3"),
    });
    expect(sdk.protocolVersion).toBe("0.3");
    const result = await sdk.sendMessage({
      tenant: "",
      message: {
        messageId: randomUUID(),
        contextId: "",
        taskId: "",
        role: 1,
        parts: [{ content: { $case: "text", value: "hi there" }, metadata: undefined, filename: "", mediaType: "" }],
        metadata: { skillId: "echo" },
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    });
    const task = "status" in result ? result : undefined;
    expect(task?.status?.state).toBe(3); // v1.0 TASK_STATE_COMPLETED
    expect(task?.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: "hi there" });
  });
});
