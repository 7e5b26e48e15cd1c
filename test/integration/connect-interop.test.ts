// The v0.3 service over Connect (JSON and binary) and gRPC-Web with the connect-es Node clients on
// HTTP/1.1, plus raw requests that a well-behaved client would never send (oversized, unknown fields,
// wrong enum names, truncated frames). All on the same port as JSON-RPC.
import { randomUUID } from "node:crypto";
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  A2AService,
  Role,
  SendMessageRequestSchema,
  TaskState,
  type MessageSchema,
  type StreamResponse,
} from "../../src/gen/a2a/v1/a2a_pb.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { grpcFrame } from "../support/grpc-frame.js";

const MAX_BODY_BYTES = 16 * 1024;

class CountingStore extends MemoryTaskStore {
  created = 0;
  override async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    this.created++;
    return super.create(record, events);
  }
}

function message(text: string, skillId?: string): MessageInitShape<typeof MessageSchema> {
  return {
    messageId: randomUUID(),
    role: Role.USER,
    content: [{ part: { case: "text", value: text } }],
    ...(skillId ? { metadata: { skillId } } : {}),
  };
}

async function codeOf(promise: Promise<unknown>): Promise<ConnectError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(err)}`);
  return err;
}

describe("A2A v0.3 over Connect and gRPC-Web (connect-es clients)", () => {
  let t: TestApp;
  let store: CountingStore;

  beforeAll(async () => {
    store = new CountingStore();
    t = await startTestApp({ MAX_BODY_BYTES: String(MAX_BODY_BYTES) }, store);
  });
  afterAll(() => t?.close());

  const transports: Array<[string, () => Transport]> = [
    ["Connect JSON", () => createConnectTransport({ baseUrl: t.baseUrl, httpVersion: "1.1", useBinaryFormat: false })],
    ["Connect binary", () => createConnectTransport({ baseUrl: t.baseUrl, httpVersion: "1.1", useBinaryFormat: true })],
    [
      "gRPC-Web binary",
      () => createGrpcWebTransport({ baseUrl: t.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
    ],
    ["gRPC-Web JSON", () => createGrpcWebTransport({ baseUrl: t.baseUrl, httpVersion: "1.1", useBinaryFormat: false })],
    ["gRPC (h2c)", () => createGrpcTransport({ baseUrl: t.baseUrl })],
  ];

  describe.each(transports)("%s", (_name, makeTransport) => {
    let client: Client<typeof A2AService>;
    beforeAll(() => {
      client = createClient(A2AService, makeTransport());
    });

    it("SendMessage completes the echo skill", async () => {
      const res = await client.sendMessage({ request: message("hello connect", "echo") });
      expect(res.payload.case).toBe("task");
      const task = res.payload.value as NonNullable<Extract<typeof res.payload, { case: "task" }>["value"]>;
      expect(task.status?.state).toBe(TaskState.COMPLETED);
      expect(task.artifacts[0]?.parts[0]?.part).toEqual({ case: "text", value: "hello connect" });
    });

    it("SendStreamingMessage streams the Task, then updates to INPUT_REQUIRED; GetTask reads it back", async () => {
      const events: StreamResponse[] = [];
      for await (const event of client.sendStreamingMessage({ request: message("Ship it", "approval-gate") }))
        events.push(event);
      expect(events[0]?.payload.case).toBe("task");
      const updates = events.flatMap((e) => (e.payload.case === "statusUpdate" ? [e.payload.value] : []));
      expect(updates.map((u) => u.status?.state)).toEqual([TaskState.WORKING, TaskState.INPUT_REQUIRED]);
      expect(updates.at(-1)?.final).toBe(true);
      const taskId = events[0]!.payload.case === "task" ? events[0]!.payload.value.id : "";
      const task = await client.getTask({ name: `tasks/${taskId}` });
      expect(task.status?.state).toBe(TaskState.INPUT_REQUIRED);
      expect(task.metadata?.["openwop"]).toMatchObject({ workflowId: "approval-gate", status: "waiting-approval" });
    });

    it("drop the stream, let the task reach its gate, resubscribe, approve, complete: one run throughout", async () => {
      const dropped = new AbortController();
      let taskId = "";
      for await (const event of client.sendStreamingMessage(
        { request: message("Slow one", "conformance-delay") },
        { signal: dropped.signal },
      )) {
        if (event.payload.case === "task") taskId = event.payload.value.id;
        dropped.abort();
        break;
      }
      expect(taskId).not.toBe("");
      // conformance-delay waits 2 s on a durable timer, then completes; resubscribe while it still works.
      const seen: number[] = [];
      for await (const event of client.taskSubscription({ name: `tasks/${taskId}` })) {
        if (event.payload.case === "task") expect(event.payload.value.id).toBe(taskId);
        if (event.payload.case === "statusUpdate") seen.push(event.payload.value.status?.state ?? -1);
      }
      expect(seen.at(-1)).toBe(TaskState.COMPLETED);
      const log = await store.readEvents(taskId, 0);
      expect(log.filter((e) => e.type === "run.started")).toHaveLength(1);
      expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
    });

    it("TaskSubscription to a task waiting for approval stays open: the reply's effect and completion arrive on it", async () => {
      const waiting = await client.sendMessage({ request: message("Ship it", "approval-gate") });
      const taskId = waiting.payload.case === "task" ? waiting.payload.value.id : "";
      expect(waiting.payload.case === "task" && waiting.payload.value.status?.state).toBe(TaskState.INPUT_REQUIRED);
      const seen: number[] = [];
      let replied: Promise<unknown> | undefined;
      for await (const event of client.taskSubscription({ name: `tasks/${taskId}` })) {
        const state =
          event.payload.case === "task" || event.payload.case === "statusUpdate"
            ? event.payload.value.status?.state
            : undefined;
        if (event.payload.case === "statusUpdate") seen.push(state ?? -1);
        if (!replied && state === TaskState.INPUT_REQUIRED) {
          replied = client.sendMessage({
            request: {
              messageId: randomUUID(),
              role: Role.USER,
              taskId,
              content: [{ part: { case: "data", value: { data: { action: "accept" } } } }],
            },
          });
        }
      }
      await replied;
      expect(seen.at(-1)).toBe(TaskState.COMPLETED);
      expect(seen).toContain(TaskState.WORKING);
    });

    it("maps domain errors to codes: NOT_FOUND, INVALID_ARGUMENT", async () => {
      expect((await codeOf(client.getTask({ name: `tasks/${randomUUID()}` }))).code).toBe(Code.NotFound);
      const malformed = await codeOf(client.cancelTask({ name: "foo/bar" }));
      expect(malformed.code).toBe(Code.InvalidArgument);
      expect(malformed.rawMessage).toContain("name must look like tasks/{id}");
      expect((await codeOf(client.listTaskPushNotificationConfig({ parent: "tasks/abc" }))).code).toBe(Code.NotFound);
    });

    it("push configs: create, get, list, delete; a refused URL is INVALID_ARGUMENT naming the arm, even for an unknown task", async () => {
      let taskId = "";
      for await (const event of client.sendStreamingMessage({ request: message("Ship it", "approval-gate") })) {
        if (event.payload.case === "task") taskId = event.payload.value.id;
      }
      const url = "https://93.184.215.14/hook"; // literal public address: no DNS needed, nothing delivered while the task waits
      const created = await client.createTaskPushNotificationConfig({
        parent: `tasks/${taskId}`,
        configId: "c1",
        config: { pushNotificationConfig: { url, token: "connect-token" } },
      });
      expect(created.name).toBe(`tasks/${taskId}/pushNotificationConfigs/c1`);
      // The token is write-only: the answers leave it empty.
      expect(created.pushNotificationConfig).toMatchObject({ id: "c1", url, token: "" });
      expect((await client.getTaskPushNotificationConfig({ name: created.name })).pushNotificationConfig?.token).toBe(
        "",
      );
      expect(
        (await client.listTaskPushNotificationConfig({ parent: `tasks/${taskId}` })).configs.map((c) => c.name),
      ).toEqual([created.name]);
      await client.deleteTaskPushNotificationConfig({ name: created.name });
      expect((await client.listTaskPushNotificationConfig({ parent: `tasks/${taskId}` })).configs).toEqual([]);
      const refused = await codeOf(
        client.createTaskPushNotificationConfig({
          parent: `tasks/${randomUUID()}`,
          config: { pushNotificationConfig: { url: "https://10.0.0.5/push" } },
        }),
      );
      expect(refused.code).toBe(Code.InvalidArgument);
      expect(refused.rawMessage).toContain("refused by the address arm");
    });

    it("a message larger than the body limit is RESOURCE_EXHAUSTED", async () => {
      const before = store.created;
      const err = await codeOf(client.sendMessage({ request: message("x".repeat(MAX_BODY_BYTES + 1), "echo") }));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(store.created).toBe(before);
    });
  });

  const post = (path: string, contentType: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
    fetch(`${t.baseUrl}/a2a.v1.A2AService/${path}`, {
      method: "POST",
      headers: { "content-type": contentType, ...headers },
      body,
    });
  const validJson = () => ({
    message: { messageId: randomUUID(), role: "ROLE_USER", content: [{ text: "hi" }], metadata: { skillId: "echo" } },
  });

  it("Connect JSON ignores unknown fields (A2A 1.0 §5.7); an unknown role name reads as unset and is refused; nothing is created by bad input", async () => {
    const before = store.created;
    const body = validJson();
    const wrongEnum = await post(
      "SendMessage",
      "application/json",
      JSON.stringify({ message: { ...body.message, role: "ROLE_BOSS" } }),
    );
    expect(wrongEnum.status).toBe(400);
    const e2 = (await wrongEnum.json()) as { code: string; message: string };
    expect(e2.code).toBe("invalid_argument");
    expect(e2.message).toMatch(/role/i);

    const wrongType = await post(
      "SendMessage",
      "application/json",
      JSON.stringify({ message: { ...body.message, messageId: 42 } }),
    );
    expect(wrongType.status).toBe(400);

    const notJson = await post("SendMessage", "application/json", "{not json");
    expect(notJson.status).toBe(400);
    expect(store.created).toBe(before);

    const ok = await post("SendMessage", "application/json", JSON.stringify({ ...validJson(), bogus: 1 }));
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { task: { status: { state: string } } }).task.status.state).toBe(
      "TASK_STATE_COMPLETED",
    );
  });

  it("truncated binary input gets a clear error and the server keeps answering", async () => {
    const before = store.created;
    const full = toBinary(
      SendMessageRequestSchema,
      create(SendMessageRequestSchema, { request: message("truncated", "echo") }),
    );

    // Connect unary, binary: the protobuf itself is cut short. The body is checked before connect-es decodes
    // it (which would call that INTERNAL): malformed input is INVALID_ARGUMENT, saying what happened.
    const unary = await post("SendMessage", "application/proto", full.subarray(0, full.length - 4));
    expect(unary.status).toBe(400);
    const e1 = (await unary.json()) as { code: string; message: string };
    expect(e1.code).toBe("invalid_argument");
    // In our words: protobuf-es's parser text is not passed on.
    expect(e1.message).toContain("truncated");

    // Connect server-streaming: the envelope announces more bytes than arrive.
    const streaming = await post(
      "SendStreamingMessage",
      "application/connect+proto",
      grpcFrame(full.subarray(0, 10), 0, full.length),
    );
    const streamBody = new Uint8Array(await streaming.arrayBuffer());
    const endStream = JSON.parse(new TextDecoder().decode(streamBody.subarray(5))) as {
      error?: { code: string; message: string };
    };
    expect(endStream.error?.code).toBe("invalid_argument");
    expect(endStream.error?.message).toMatch(/envelope|incomplete|premature/i);

    // gRPC-Web: same truncated frame; the status comes back in the trailer frame.
    const grpcWeb = await post(
      "SendMessage",
      "application/grpc-web+proto",
      grpcFrame(full.subarray(0, 10), 0, full.length),
    );
    const trailer = new TextDecoder().decode(new Uint8Array(await grpcWeb.arrayBuffer()));
    expect(trailer).toMatch(new RegExp(`grpc-status: ?${Code.InvalidArgument}\\b`, "i"));
    expect(decodeURIComponent(trailer)).toContain("incomplete envelope");

    expect(store.created).toBe(before);
    const client = createClient(A2AService, createConnectTransport({ baseUrl: t.baseUrl, httpVersion: "1.1" }));
    const card = await client.getAgentCard({});
    expect(card.name).toBe("OpenWOP A2A host");
    expect(card.additionalInterfaces.map((i) => i.transport)).toEqual(["JSONRPC", "GRPC", "HTTP+JSON"]);
  });

  it("an unknown rpc under the service path is not found; other paths still reach the router", async () => {
    const unknown = await post("NoSuchMethod", "application/json", "{}");
    expect(unknown.status).toBe(404);
    const health = await fetch(`${t.baseUrl}/healthz`);
    expect(health.status).toBe(200);
  });
});
