// A2A 0.3 and 1.0 side by side on one server over the same durable tasks (MongoDB store): a task created
// over one version is read, subscribed and cancelled over the other; historyLength keeps each version's
// meaning; message.messageId is an idempotency key across versions; A2A-Version negotiation on every
// binding; the card with and without A2A-Version: 1.0 and the discovery versions; tenants; bad input.
import { randomUUID } from "node:crypto";
import { fromJson } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { A2AService as V03Service, TaskState as V03State } from "../../src/gen/a2a/v1/a2a_pb.js";
import { A2AService as V10Service, Role as V10Role, TaskState as V10State } from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import "../support/mongo.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp, TEST_WORKFLOWS_DIR } from "../support/start-server.js";

const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];
const ALICE = "alice-key-0123456789abcdef"; // tenant acme
const BOB = "bob-key-0123456789abcdef"; // tenant globex
const MAX_BODY_BYTES = 16 * 1024;

type Obj = Record<string, any>;
type Rpc = { jsonrpc: "2.0"; id: unknown; result?: Obj; error?: { code: number; message: string; data?: any } };

/** google.rpc.ErrorInfo from its protobuf bytes (reason = 1, domain = 2). */
function errorInfoOf(err: ConnectError): { reason: string; domain: string } | undefined {
  const detail = err.details.find((d) => "type" in d && d.type === "google.rpc.ErrorInfo") as
    { value: Uint8Array } | undefined;
  if (!detail) return undefined;
  const reader = new BinaryReader(detail.value);
  const info = { reason: "", domain: "" };
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1) info.reason = reader.string();
    else if (field === 2) info.domain = reader.string();
    else reader.skip(wireType);
  }
  return info;
}

async function connectErrorOf(promise: Promise<unknown>): Promise<ConnectError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(err)}`);
  return err;
}

describe("A2A 0.3 and 1.0 side by side over the same durable tasks", () => {
  let t: TestApp;
  let mongo: MongoClient;
  const dbName = `cross_${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    mongo = await MongoClient.connect(inject("mongoUri"));
    const store = new MongoTaskStore(mongo, mongo.db(dbName));
    await store.init();
    t = await startTestApp(
      {
        WORKFLOWS_DIR: TEST_WORKFLOWS_DIR,
        MAX_BODY_BYTES: String(MAX_BODY_BYTES),
        API_KEYS: JSON.stringify([
          { id: "alice", tenant: "acme", scopes: ALL, key: ALICE },
          { id: "bob", tenant: "globex", scopes: ALL, key: BOB },
        ]),
      },
      store,
    );
  });
  afterAll(async () => {
    await t?.close();
    await mongo?.db(dbName).dropDatabase();
    await mongo?.close();
  });

  const auth = (key = ALICE) => ({ authorization: `Bearer ${key}` });
  const v10 = { "A2A-Version": "1.0" };
  async function rpc(method: string, params: unknown, headers: Record<string, string> = {}): Promise<Rpc> {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth(), ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Rpc;
  }
  const rpc10 = (method: string, params: unknown, headers: Record<string, string> = {}) =>
    rpc(method, params, { ...v10, ...headers });
  const rest = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) =>
    fetch(`${t.baseUrl}${path}`, {
      ...init,
      headers: { ...auth(), ...(init.body ? { "content-type": "application/a2a+json" } : {}), ...init.headers },
    });

  const msg03 = (text: string, skillId?: string, extra: Obj = {}) => ({
    kind: "message",
    messageId: randomUUID(),
    role: "user",
    parts: [{ kind: "text", text }],
    ...(skillId ? { metadata: { skillId } } : {}),
    ...extra,
  });
  const msg10 = (text: string, skillId?: string, extra: Obj = {}) => ({
    messageId: randomUUID(),
    role: "ROLE_USER",
    parts: [{ text }],
    ...(skillId ? { metadata: { skillId } } : {}),
    ...extra,
  });

  const grpc10 = (): Client<typeof V10Service> => createClient(V10Service, createGrpcTransport({ baseUrl: t.baseUrl }));
  const grpc03 = (): Client<typeof V03Service> => createClient(V03Service, createGrpcTransport({ baseUrl: t.baseUrl }));

  it("every observer of a waiting task sees the same interrupt token, on every binding and version; it stops working once resolved", async () => {
    const created = (await rpc("message/send", { message: msg03("Send the quarterly report", "approval-gate") }))
      .result!;
    const id = created["id"] as string;
    const token = created["metadata"]["openwop"]["interruptToken"] as string;
    expect(token).toEqual(expect.any(String));
    // Repeated reads are identical, whole Task included.
    const get03 = async () => (await rpc("tasks/get", { id })).result!;
    expect(await get03()).toEqual(await get03());
    const get10 = async () => (await rpc10("GetTask", { id })).result!;
    expect(await get10()).toEqual(await get10());
    const rest10 = async () => (await (await rest(`/tasks/${id}`, { headers: v10 })).json()) as Obj;
    expect(await rest10()).toEqual(await rest10());
    // One token, whoever reads it and however.
    const seen = [
      (await get03())["metadata"]["openwop"]["interruptToken"],
      (await get10())["metadata"]["openwop"]["interruptToken"],
      (await rest10())["metadata"]["openwop"]["interruptToken"],
      (await grpc10().getTask({ id }, { headers: auth() })).metadata?.["openwop"],
      (await grpc03().getTask({ name: `tasks/${id}` }, { headers: auth() })).metadata?.["openwop"],
      ((await (await fetch(`${t.baseUrl}/v1/runs/${id}`, { headers: auth() })).json()) as Obj)["interrupts"][0][
        "token"
      ],
    ].map((v) => (typeof v === "string" ? v : (v as Obj)["interruptToken"]));
    expect(new Set(seen)).toEqual(new Set([token]));
    // Resolved: the same token no longer works.
    const done = (
      await rpc("message/send", {
        message: msg03("ok", undefined, { taskId: id, parts: [{ kind: "data", data: { action: "accept" } }] }),
      })
    ).result!;
    expect(done["status"]["state"]).toBe("completed");
    const late = await fetch(`${t.baseUrl}/v1/interrupts/${token}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ resumeValue: { action: "accept" } }),
    });
    expect(late.status).toBe(409);
  });

  it("a task created over 0.3 is read, subscribed and cancelled over 1.0", async () => {
    const created = await rpc("message/send", { message: msg03("Send the quarterly report", "approval-gate") });
    const task = created.result!;
    expect(task["kind"]).toBe("task");
    expect(task["status"]["state"]).toBe("input-required");

    // 1.0 JSON-RPC: ProtoJSON spelling, no kind.
    const read = (await rpc10("GetTask", { id: task["id"] })).result!;
    expect(read["status"]["state"]).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(read["kind"]).toBeUndefined();
    expect(read["history"][0]).toMatchObject({ role: "ROLE_USER", parts: [{ text: "Send the quarterly report" }] });
    expect(read["history"][0]["kind"]).toBeUndefined();
    expect(read["metadata"]["openwop"]["interrupt"]["kind"]).toBe("approval");

    // 1.0 HTTP+JSON subscribe: the Task first; the stream stays open through the interrupt and ends when a
    // 1.0 gRPC cancel makes the task terminal. 0.3 reads it as canceled.
    const subscription = readSse(await rest(`/tasks/${task["id"]}:subscribe`, { headers: v10 }));
    const cancelled = await grpc10().cancelTask({ id: task["id"] }, { headers: auth() });
    expect(cancelled.status?.state).toBe(V10State.CANCELED);
    const frames = await subscription;
    expect(Object.keys(frames[0]!.data as Obj)).toEqual(["task"]);
    expect((frames[0]!.data as Obj)["task"]["status"]["state"]).toBe("TASK_STATE_INPUT_REQUIRED");
    expect((frames.at(-1)!.data as Obj)["statusUpdate"]["status"]["state"]).toBe("TASK_STATE_CANCELED");
    expect((await rpc("tasks/get", { id: task["id"] })).result!["status"]["state"]).toBe("canceled");
    // A terminal task: 1.0 refuses the subscription (-32004), 0.3 answers the Task and closes.
    const refused = await rpc10("SubscribeToTask", { id: task["id"] });
    expect(refused.error?.code).toBe(-32004);
    expect(refused.error?.data[0]).toMatchObject({
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: "UNSUPPORTED_OPERATION",
      domain: "a2a-protocol.org",
    });
    const legacy = await readSse(
      await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth() },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/resubscribe", params: { id: task["id"] } }),
      }),
    );
    expect(legacy.map((f) => (f.data as Rpc).result!["kind"])).toEqual(["task"]);
  });

  it("a task created over 1.0 (returnImmediately) is read, subscribed and cancelled over 0.3", async () => {
    const res = await rest("/message:send", {
      method: "POST",
      body: JSON.stringify({ message: msg10("slowly", "slow-approval"), configuration: { returnImmediately: true } }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/a2a+json");
    const task = ((await res.json()) as Obj)["task"];
    expect(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]).toContain(task["status"]["state"]);
    // The A2A task is the OpenWOP run.
    const run = await fetch(`${t.baseUrl}/v1/runs/${task["id"]}`, { headers: auth() });
    expect(run.status).toBe(200);

    // 0.3 resubscribe: the Task first, then updates; it stays open at input-required (final: false) and ends
    // when a 0.3 gRPC cancel (CANCELLED, two Ls) makes the task terminal; 1.0 reads TASK_STATE_CANCELED.
    let cancelled: Promise<{ status?: { state: V03State } }> | undefined;
    const frames = await readSse(
      await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth() },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tasks/resubscribe", params: { id: task["id"] } }),
      }),
      (f) => {
        const r = (f.data as Rpc).result!;
        if (!cancelled && r["status"]?.state === "input-required")
          cancelled = grpc03().cancelTask({ name: `tasks/${task["id"]}` }, { headers: auth() });
      },
    );
    const results = frames.map((f) => (f.data as Rpc).result!);
    expect(results[0]!["kind"]).toBe("task");
    expect(
      results
        .filter((r) => r["kind"] === "status-update" && r["status"].state === "input-required")
        .every((r) => r["final"] === false),
    ).toBe(true);
    expect(results.at(-1)).toMatchObject({ kind: "status-update", final: true, status: { state: "canceled" } });
    expect((await cancelled!).status?.state).toBe(V03State.CANCELLED);
    expect((await rpc10("GetTask", { id: task["id"] })).result!["status"]["state"]).toBe("TASK_STATE_CANCELED");
  });

  it("1.0 streams over Connect and gRPC-Web too: the Task, then updates, closing at input-required; SubscribeToTask stays open through it", async () => {
    const transports: Array<[string, Transport]> = [
      ["Connect JSON", createConnectTransport({ baseUrl: t.baseUrl, httpVersion: "1.1", useBinaryFormat: false })],
      ["Connect binary", createConnectTransport({ baseUrl: t.baseUrl, httpVersion: "1.1", useBinaryFormat: true })],
      ["gRPC-Web", createGrpcWebTransport({ baseUrl: t.baseUrl, httpVersion: "1.1" })],
    ];
    for (const [name, transport] of transports) {
      const client = createClient(V10Service, transport);
      const states: string[] = [];
      let taskId = "";
      for await (const event of client.sendStreamingMessage(
        {
          message: {
            messageId: randomUUID(),
            role: V10Role.USER,
            parts: [{ content: { case: "text", value: name } }],
            metadata: { skillId: "approval-gate" },
          },
        },
        { headers: auth() },
      )) {
        if (event.payload.case === "task") taskId = event.payload.value.id;
        states.push(
          event.payload.case === "statusUpdate"
            ? V10State[event.payload.value.status!.state]
            : String(event.payload.case),
        );
      }
      expect(states[0], name).toBe("task");
      expect(states.at(-1), name).toBe("INPUT_REQUIRED");
      // Re-attach to the waiting task, reply, and watch it complete on the same subscription.
      const watched: string[] = [];
      let replied: Promise<unknown> | undefined;
      for await (const event of client.subscribeToTask({ id: taskId }, { headers: auth() })) {
        const state =
          event.payload.case === "task" || event.payload.case === "statusUpdate"
            ? event.payload.value.status!.state
            : undefined;
        watched.push(event.payload.case === "statusUpdate" ? V10State[state!] : String(event.payload.case));
        if (!replied && state === V10State.INPUT_REQUIRED) {
          replied = client.sendMessage(
            {
              message: {
                messageId: randomUUID(),
                role: V10Role.USER,
                taskId,
                parts: [{ content: { case: "data", value: fromJson(ValueSchema, { action: "accept" }) } }],
              },
            },
            { headers: auth() },
          );
        }
      }
      await replied;
      expect(watched[0], name).toBe("task");
      expect(watched.at(-1), name).toBe("COMPLETED");
    }
  });

  it("historyLength: 0 means all on 0.3 and none on 1.0, read both ways", async () => {
    const created = (await rpc10("SendMessage", { message: msg10("history please", "echo") })).result!["task"];
    const id = created["id"];
    expect(created["history"].length).toBeGreaterThan(0);
    expect((await rpc("tasks/get", { id, historyLength: 0 })).result!["history"].length).toBe(
      created["history"].length,
    );
    expect((await rpc10("GetTask", { id, historyLength: 0 })).result!["history"]).toEqual([]);
    expect((await rpc10("GetTask", { id, historyLength: 1 })).result!["history"]).toHaveLength(1);
    const rest10 = (await (await rest(`/tasks/${id}?historyLength=0`, { headers: v10 })).json()) as Obj;
    expect(rest10["history"]).toEqual([]);
    const rest03 = (await (await rest(`/v1/tasks/${id}?historyLength=0`)).json()) as Obj;
    expect(rest03["history"].length).toBe(created["history"].length);
    const viaGrpc10 = await grpc10().getTask({ id, historyLength: 0 }, { headers: auth() });
    expect(viaGrpc10.history).toEqual([]);
    const viaGrpc03 = await grpc03().getTask({ name: `tasks/${id}`, historyLength: 0 }, { headers: auth() });
    expect(viaGrpc03.history.length).toBe(created["history"].length);
    // A 0.3 send with historyLength 0 answers everything; a 1.0 send with 0 answers no history.
    expect(
      (await rpc("message/send", { message: msg03("h", "echo"), configuration: { historyLength: 0 } })).result![
        "history"
      ].length,
    ).toBeGreaterThan(0);
    expect(
      (await rpc10("SendMessage", { message: msg10("h", "echo"), configuration: { historyLength: 0 } })).result![
        "task"
      ]["history"],
    ).toEqual([]);
  });

  it("message.messageId is an idempotency key per caller, across versions and bindings", async () => {
    const messageId = randomUUID();
    const first = (await rpc10("SendMessage", { message: { ...msg10("only once", "echo"), messageId } })).result![
      "task"
    ];
    const again = (await rpc10("SendMessage", { message: { ...msg10("only once", "echo"), messageId } })).result![
      "task"
    ];
    expect(again["id"]).toBe(first["id"]);
    const over03 = (await rpc("message/send", { message: { ...msg03("only once", "echo"), messageId } })).result!;
    expect(over03["id"]).toBe(first["id"]);
    const overGrpc = await grpc10().sendMessage(
      {
        message: {
          messageId,
          role: V10Role.USER,
          parts: [{ content: { case: "text", value: "only once" } }],
          metadata: { skillId: "echo" },
        },
      },
      { headers: auth() },
    );
    expect(overGrpc.payload.case === "task" && overGrpc.payload.value.id).toBe(first["id"]);
    const listed = (await rpc10("ListTasks", { contextId: first["contextId"] })).result!;
    expect(listed["totalSize"]).toBe(1);

    // The same messageId with different content is refused, on either version; nothing is created.
    const conflict10 = await rpc10("SendMessage", { message: { ...msg10("something else", "echo"), messageId } });
    expect(conflict10.error?.code).toBe(-32602);
    expect(conflict10.error?.message).toContain(messageId);
    expect(conflict10.error?.data[0]["reason"]).toBe("IDEMPOTENCY_CONFLICT");
    const conflict03 = await rpc("message/send", { message: { ...msg03("only once", "approval-gate"), messageId } });
    expect(conflict03.error?.code).toBe(-32602);
    const conflictRest = await rest("/message:send", {
      method: "POST",
      body: JSON.stringify({ message: { ...msg10("other", "echo"), messageId } }),
    });
    expect(conflictRest.status).toBe(409);
    // Another caller's messageId space is its own.
    const bobs = (await rpc10("SendMessage", { message: { ...msg10("only once", "echo"), messageId } }, auth(BOB)))
      .result!["task"];
    expect(bobs["id"]).not.toBe(first["id"]);

    // A repeated reply to a waiting task resolves the gate once; a changed one is refused.
    const gate = (await rpc10("SendMessage", { message: msg10("approve me", "approval-gate") })).result!["task"];
    expect(gate["status"]["state"]).toBe("TASK_STATE_INPUT_REQUIRED");
    const reply = {
      messageId: randomUUID(),
      role: "ROLE_USER",
      taskId: gate["id"],
      parts: [{ data: { action: "accept" } }],
    };
    const done = (await rpc10("SendMessage", { message: reply })).result!["task"];
    expect(done["status"]["state"]).toBe("TASK_STATE_COMPLETED");
    const repeated = (await rpc10("SendMessage", { message: reply })).result!["task"];
    expect(repeated["status"]["state"]).toBe("TASK_STATE_COMPLETED");
    expect(repeated["history"].filter((m: Obj) => m["messageId"] === reply.messageId)).toHaveLength(1);
    const changed = await rpc10("SendMessage", { message: { ...reply, parts: [{ data: { action: "reject" } }] } });
    expect(changed.error?.code).toBe(-32602);
  });

  it("A2A-Version negotiation: absent = 0.3, 0.3 and 1.0 accepted, anything else VersionNotSupported on every binding", async () => {
    const id = (await rpc10("SendMessage", { message: msg10("v", "echo") })).result!["task"]["id"];
    expect((await rpc("GetTask", { id }, { "A2A-Version": "1.0" })).result!["id"]).toBe(id);
    expect((await rpc("tasks/get", { id }, { "A2A-Version": "0.3" })).result!["id"]).toBe(id);
    expect((await rpc("tasks/get", { id })).result!["id"]).toBe(id);

    const bad10 = await rpc("GetTask", { id }, { "A2A-Version": "9.9" });
    expect(bad10.error?.code).toBe(-32009);
    expect(bad10.error?.data[0]).toMatchObject({ reason: "VERSION_NOT_SUPPORTED", domain: "a2a-protocol.org" });
    expect((await rpc("tasks/get", { id }, { "A2A-Version": "9.9" })).error?.code).toBe(-32009);
    const viaQuery = await fetch(`${t.baseUrl}/a2a/jsonrpc?A2A-Version=2.0`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth() },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id } }),
    });
    expect(((await viaQuery.json()) as Rpc).error?.code).toBe(-32009);

    const rest10 = await rest(`/tasks/${id}`, { headers: { "A2A-Version": "9.9" } });
    expect(rest10.status).toBe(400);
    expect(((await rest10.json()) as Obj)["error"]).toMatchObject({
      code: 400,
      status: "FAILED_PRECONDITION",
      details: [{ reason: "VERSION_NOT_SUPPORTED" }],
    });
    expect((await rest(`/v1/tasks/${id}`, { headers: { "A2A-Version": "9.9" } })).status).toBe(400);
    expect((await rest(`/tasks/${id}?A2A-Version=9.9`)).status).toBe(400);

    const grpcBad = await connectErrorOf(grpc10().getTask({ id }, { headers: { ...auth(), "a2a-version": "9.9" } }));
    expect(grpcBad.code).toBe(Code.FailedPrecondition);
    expect(errorInfoOf(grpcBad)).toEqual({ reason: "VERSION_NOT_SUPPORTED", domain: "a2a-protocol.org" });
    expect(
      (
        await connectErrorOf(
          grpc03().getTask({ name: `tasks/${id}` }, { headers: { ...auth(), "a2a-version": "9.9" } }),
        )
      ).code,
    ).toBe(Code.FailedPrecondition);
    expect((await grpc10().getTask({ id }, { headers: { ...auth(), "a2a-version": "1.0" } })).id).toBe(id);
  });

  it("the card: a 0.3 card embedding supportedInterfaces without A2A-Version, the pure 1.0 card with it; discovery versions match", async () => {
    const plain = await fetch(`${t.baseUrl}/.well-known/agent-card.json`);
    expect(plain.headers.get("vary")).toContain("A2A-Version");
    const superset = (await plain.json()) as Obj;
    expect(superset).toMatchObject({
      protocolVersion: "0.3.0",
      preferredTransport: "JSONRPC",
      url: `${t.baseUrl}/a2a/jsonrpc`,
    });
    expect(superset["additionalInterfaces"].map((i: Obj) => i["transport"])).toEqual(["JSONRPC", "GRPC", "HTTP+JSON"]);

    const res = await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers: v10 });
    expect(res.headers.get("vary")).toContain("A2A-Version");
    const card = (await res.json()) as Obj;
    for (const legacyField of [
      "url",
      "preferredTransport",
      "additionalInterfaces",
      "protocolVersion",
      "supportsAuthenticatedExtendedCard",
    ])
      expect(card[legacyField]).toBeUndefined();
    expect(card["securitySchemes"]["apiKey"]).toEqual({
      httpAuthSecurityScheme: expect.objectContaining({ scheme: "bearer" }),
    });
    expect(card["securityRequirements"]).toEqual([{ schemes: { apiKey: { list: [] } } }]);
    expect(card["capabilities"]).toMatchObject({ streaming: true, extendedAgentCard: false });
    // Each binding once per version, the same list in both cards.
    expect(card["supportedInterfaces"]).toEqual(superset["supportedInterfaces"]);
    const pairs = card["supportedInterfaces"].map((i: Obj) => `${i["protocolBinding"]} ${i["protocolVersion"]}`);
    expect(new Set(pairs).size).toBe(pairs.length);
    expect(pairs).toHaveLength(6);
    expect(
      (await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers: { "A2A-Version": "3.1" } })).status,
    ).toBe(400);

    const discovery = (await (await fetch(`${t.baseUrl}/.well-known/openwop`)).json()) as Obj;
    expect(discovery["a2a"]).toMatchObject({
      protocolVersions: ["0.3", "1.0"],
      preferredVersion: "1.0",
      profiles: ["a2a-1.0", "a2a-0.3-legacy"],
      durableTasks: true,
    });
    const cardVersions = [
      ...new Set(card["supportedInterfaces"].map((i: Obj) => i["protocolVersion"] as string)),
    ].sort();
    expect(cardVersions).toEqual(discovery["a2a"]["protocolVersions"]);
    expect(discovery["a2a"]["protocolVersions"]).toContain(discovery["a2a"]["preferredVersion"]);
  });

  it("the tenant comes from the API key: /{tenant}/ and tenant fields cannot reach another tenant", async () => {
    const alices = (await rpc10("SendMessage", { message: msg10("mine", "echo") })).result!["task"];
    expect((await rest(`/acme/tasks/${alices["id"]}`)).status).toBe(200);
    const otherPrefix = await rest(`/globex/tasks/${alices["id"]}`);
    expect(otherPrefix.status).toBe(404);
    expect(((await otherPrefix.json()) as Obj)["error"]["details"][0]["reason"]).toBe("TASK_NOT_FOUND");
    expect((await rpc10("GetTask", { id: alices["id"], tenant: "globex" })).error?.code).toBe(-32001);
    expect(
      (await rest("/globex/message:send", { method: "POST", body: JSON.stringify({ message: msg10("x", "echo") }) }))
        .status,
    ).toBe(404);
    // Bob's key sees none of Alice's tasks, on any binding.
    expect((await rpc10("GetTask", { id: alices["id"] }, auth(BOB))).error?.code).toBe(-32001);
    expect((await connectErrorOf(grpc10().getTask({ id: alices["id"] }, { headers: auth(BOB) }))).code).toBe(
      Code.NotFound,
    );
    const bobsList = (await rpc10("ListTasks", {}, auth(BOB))).result!;
    expect(bobsList["tasks"].map((x: Obj) => x["id"])).not.toContain(alices["id"]);
    // No key: 401 / UNAUTHENTICATED on the 1.0 bindings too.
    // 401, 404 and 405 of a 1.0 HTTP+JSON route answer in the 1.0 shape ({error: {code, status, message, details}}).
    const noKey = await fetch(`${t.baseUrl}/tasks/${alices["id"]}`);
    expect(noKey.status).toBe(401);
    expect(((await noKey.json()) as Obj)["error"]).toMatchObject({
      code: 401,
      status: "UNAUTHENTICATED",
      details: [{ reason: "UNAUTHENTICATED" }],
    });
    const wrongMethod = await rest(`/tasks/${alices["id"]}`, { method: "PUT", body: "{}" });
    expect(wrongMethod.status).toBe(405);
    expect(((await wrongMethod.json()) as Obj)["error"]).toMatchObject({
      code: 405,
      status: "UNIMPLEMENTED",
      details: [{ reason: "METHOD_NOT_ALLOWED" }],
    });
    const noRoute = await rest(`/acme/tasks/${alices["id"]}/nothing/here`, { headers: v10 });
    expect(noRoute.status).toBe(404);
    expect(((await noRoute.json()) as Obj)["error"]).toMatchObject({ code: 404, status: "NOT_FOUND" });
    expect((await connectErrorOf(grpc10().getTask({ id: alices["id"] }))).code).toBe(Code.Unauthenticated);
  });

  it("bad input on the 1.0 bindings: clear errors, nothing created, the server keeps serving", async () => {
    const before = (await rpc10("ListTasks", { pageSize: 1 })).result!["totalSize"];

    const malformed = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth(), ...v10 },
      body: '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{',
    });
    expect(((await malformed.json()) as Rpc).error?.code).toBe(-32700);
    const malformedRest = await rest("/message:send", { method: "POST", body: "{not json" });
    expect(malformedRest.status).toBe(400);
    expect(((await malformedRest.json()) as Obj)["error"]["status"]).toBe("INVALID_ARGUMENT");

    const bogusEnum = await rpc10("ListTasks", { status: "TASK_STATE_BOGUS" });
    expect(bogusEnum.error?.code).toBe(-32602);
    expect(bogusEnum.error?.message).toContain("TASK_STATE_BOGUS");
    const bogusQuery = await rest("/tasks?status=TASK_STATE_BOGUS");
    expect(bogusQuery.status).toBe(400);
    expect(((await bogusQuery.json()) as Obj)["error"]["message"]).toContain("TASK_STATE_BOGUS");
    const bogusState = await rpc10("SendMessage", { message: msg10("x", "echo", { role: "ROLE_BOGUS" }) });
    expect(bogusState.error?.code).toBe(-32602);

    const v03Shape = await rpc10("SendMessage", { message: msg03("x", "echo") });
    expect(v03Shape.error?.code).toBe(-32602);
    // `kind` and the 0.3 part shapes are unknown fields (ignored); the 0.3 role name is not a 1.0 enum name.
    expect(v03Shape.error?.message).toContain("Role");
    const unknownQuery = await rest("/tasks?colour=blue");
    expect(unknownQuery.status).toBe(400);
    const noParts = await rpc10("SendMessage", { message: { messageId: "m", role: "ROLE_USER", parts: [] } });
    expect(noParts.error?.message).toContain("message.parts");
    const notObject = await rpc10("SendMessage", { message: msg10("x", "echo", { parts: [{ data: [1, 2] }] }) });
    expect(notObject.error?.message).toContain("data");
    const badPage = await rpc10("ListTasks", { pageToken: "not-a-token" });
    expect(badPage.error?.message).toContain("pageToken");
    const grpcBad = await connectErrorOf(
      grpc10().sendMessage({ message: { messageId: "", role: V10Role.USER, parts: [] } }, { headers: auth() }),
    );
    expect(grpcBad.code).toBe(Code.InvalidArgument);
    expect(errorInfoOf(grpcBad)?.reason).toBe("INVALID_PARAMS");

    const big = "x".repeat(MAX_BODY_BYTES + 10);
    const oversized = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth() },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: msg10(big) } }),
    });
    expect(oversized.status).toBe(413);
    const oversizedRest = await rest("/message:send", {
      method: "POST",
      body: JSON.stringify({ message: msg10(big) }),
    });
    expect(oversizedRest.status).toBe(413);
    const oversizedGrpc = await connectErrorOf(
      grpc10().sendMessage(
        { message: { messageId: "m", role: V10Role.USER, parts: [{ content: { case: "text", value: big } }] } },
        { headers: auth() },
      ),
    );
    expect(oversizedGrpc.code).toBe(Code.ResourceExhausted);

    expect((await rpc10("ListTasks", { pageSize: 1 })).result!["totalSize"]).toBe(before);
    expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
    expect(
      (await rpc10("SendMessage", { message: msg10("still up", "echo") })).result!["task"]["status"]["state"],
    ).toBe("TASK_STATE_COMPLETED");
  });

  it("returnImmediately needs durable tasks: a host on the in-memory store refuses it; push off is PushNotificationNotSupported", async () => {
    const memory = await startTestApp({ PUSH_ENABLED: "false" });
    try {
      const res = await fetch(`${memory.baseUrl}/message:send`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: msg10("now", "echo"), configuration: { returnImmediately: true } }),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as Obj)["error"]["details"][0]["reason"]).toBe("UNSUPPORTED_OPERATION");
      const discovery = (await (await fetch(`${memory.baseUrl}/.well-known/openwop`)).json()) as Obj;
      expect(discovery["a2a"]["durableTasks"]).toBe(false);
      const push = await fetch(`${memory.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", ...v10 },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "CreateTaskPushNotificationConfig",
          params: { taskId: "t1", url: "https://hooks.example.com/x" },
        }),
      });
      const pushError = ((await push.json()) as Rpc).error;
      expect(pushError?.code).toBe(-32003);
      expect(pushError?.data[0]["reason"]).toBe("PUSH_NOTIFICATION_NOT_SUPPORTED");
      const grpcPush = await connectErrorOf(
        createClient(V10Service, createGrpcTransport({ baseUrl: memory.baseUrl })).createTaskPushNotificationConfig({
          taskId: "t1",
          url: "https://hooks.example.com/x",
        }),
      );
      expect(grpcPush.code).toBe(Code.FailedPrecondition);
    } finally {
      await memory.close();
    }
  });
});
