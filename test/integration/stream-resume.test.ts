// Resumable A2A streams: every SSE event carries `id:` (a cursor `${taskId}:${sequence}` into the task's
// stored log), and a subscription with `Last-Event-ID` (gRPC: `a2a-last-event-id` metadata) replays what came
// after it, in order, then goes live; a task that ended meanwhile replays through its end and closes. Every
// binding and version: JSON-RPC 0.3 / 1.0, HTTP+JSON 0.3 / 1.0, gRPC 0.3; a second instance on one store.
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { readSse, type SseFrame } from "../support/sse.js";
import { startServerProcess } from "../support/server-process.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;

interface Binding {
  name: string;
  open(base: string, taskId: string, headers?: Record<string, string>): Promise<Response>;
  /** The stream item of a frame: the JSON-RPC result, or the HTTP+JSON StreamResponse. */
  item(frame: SseFrame): Obj;
}

const jsonRpc = (name: string, method: string, version: Record<string, string>): Binding => ({
  name,
  open: (base, taskId, headers = {}) =>
    fetch(`${base}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...version, ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { id: taskId } }),
    }),
  item: (frame) => (frame.data as Obj)["result"] as Obj,
});
const rest = (name: string, path: (taskId: string) => string, version: Record<string, string>): Binding => ({
  name,
  open: (base, taskId, headers = {}) => fetch(`${base}${path(taskId)}`, { headers: { ...version, ...headers } }),
  item: (frame) => frame.data as Obj,
});

const BINDINGS: Binding[] = [
  jsonRpc("JSON-RPC 0.3 tasks/resubscribe", "tasks/resubscribe", {}),
  jsonRpc("JSON-RPC 1.0 SubscribeToTask", "SubscribeToTask", { "A2A-Version": "1.0" }),
  rest("HTTP+JSON 0.3 GET /v1/tasks/{id}:subscribe", (id) => `/v1/tasks/${id}:subscribe`, {}),
  rest("HTTP+JSON 1.0 GET /tasks/{id}:subscribe", (id) => `/tasks/${id}:subscribe`, { "A2A-Version": "1.0" }),
];

/** task | status | artifact, whatever the version's shape. */
function kindOf(item: Obj): string {
  if (typeof item["kind"] === "string")
    return item["kind"] === "task" ? "task" : item["kind"] === "status-update" ? "status" : "artifact";
  return "task" in item ? "task" : "statusUpdate" in item ? "status" : "artifact";
}
/** A status update's state as the 0.3 JSON spells it. */
function stateOf(item: Obj): string {
  const state = (item["status"] ?? item["statusUpdate"]?.["status"] ?? item["task"]?.["status"])?.["state"] as string;
  return state
    .replace(/^TASK_STATE_/, "")
    .toLowerCase()
    .replace("_", "-")
    .replace("cancelled", "canceled");
}
/** The states of a stream's status updates (the approval's artifact comes between them). */
const statesOf = (binding: Binding, frames: SseFrame[]): string[] =>
  frames
    .map((f) => binding.item(f))
    .filter((i) => kindOf(i) === "status")
    .map(stateOf);
const sequenceOf = (taskId: string, id: string | undefined): number => {
  expect(id).toMatch(new RegExp(`^${taskId}:\\d+$`));
  return Number(id!.slice(taskId.length + 1));
};

async function rpc(base: string, method: string, params: unknown): Promise<Obj> {
  const res = await fetch(`${base}/a2a/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
  });
  return (await res.json()) as Obj;
}
const message = (extra: Obj = {}) => ({
  kind: "message",
  messageId: randomUUID(),
  role: "user",
  parts: [{ kind: "text", text: "Send the quarterly report" }],
  metadata: { skillId: "approval-gate" },
  ...extra,
});
const accept = (taskId: string) => ({
  kind: "message",
  messageId: randomUUID(),
  role: "user",
  taskId,
  parts: [{ kind: "data", data: { action: "accept" } }],
});

/** An approval-gate task waiting at input-required. */
async function waitingTask(base: string): Promise<string> {
  const sent = await rpc(base, "message/send", { message: message() });
  expect(sent["result"]["status"]["state"]).toBe("input-required");
  return sent["result"]["id"] as string;
}
async function approve(base: string, taskId: string): Promise<void> {
  expect((await rpc(base, "message/send", { message: accept(taskId) }))["result"]["status"]["state"]).toBe("completed");
}
/** The stream's first frame (the Task), then the stream is let go of, as a dropped client's. */
async function firstFrame(binding: Binding, base: string, taskId: string): Promise<SseFrame> {
  const frames = await readSse(await binding.open(base, taskId), () => true);
  return frames[0]!;
}

describe("every A2A SSE stream sends ids, and resumes from Last-Event-ID", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ STREAM_RESUME_MAX_EVENTS: "50" });
  });
  afterAll(() => t?.close());

  it.each(BINDINGS)(
    "$name: the Task and every update carry increasing cursors; a resume after the task ended replays exactly the rest and closes",
    async (binding) => {
      const taskId = await waitingTask(t.baseUrl);
      // One client stays for the whole run; another drops after the Task and comes back once the task ended.
      const whole = binding.open(t.baseUrl, taskId).then((res) => readSse(res));
      const dropped = await firstFrame(binding, t.baseUrl, taskId);
      expect(kindOf(binding.item(dropped))).toBe("task");
      const taskSequence = sequenceOf(taskId, dropped.id);
      await approve(t.baseUrl, taskId);
      const all = await whole;
      expect(all[0]!.id).toBe(dropped.id);
      const sequences = all.map((f) => sequenceOf(taskId, f.id));
      expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
      expect(new Set(sequences).size).toBe(sequences.length);

      const res = await binding.open(t.baseUrl, taskId, { "Last-Event-ID": dropped.id! });
      expect(res.status).toBe(200);
      const resumed = await readSse(res);
      // No Task first: the events after the cursor, in order, identical to what the client that stayed got.
      expect(resumed.map((f) => [f.id, f.data])).toEqual(all.slice(1).map((f) => [f.id, f.data]));
      expect(resumed.length).toBeGreaterThan(0);
      expect(resumed.every((f) => sequenceOf(taskId, f.id) > taskSequence)).toBe(true);
      expect(stateOf(binding.item(resumed.at(-1)!))).toBe("completed");

      // From the last id: nothing is left, the stream closes at once (it is not refused).
      const atEnd = await binding.open(t.baseUrl, taskId, { "Last-Event-ID": resumed.at(-1)!.id! });
      expect(atEnd.status).toBe(200);
      expect(await readSse(atEnd)).toEqual([]);
    },
  );

  it.each([
    [
      "JSON-RPC 0.3 message/stream",
      () =>
        fetch(`${t.baseUrl}/a2a/jsonrpc`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/stream", params: { message: message() } }),
        }),
    ],
    [
      "JSON-RPC 1.0 SendStreamingMessage",
      () =>
        fetch(`${t.baseUrl}/a2a/jsonrpc`, {
          method: "POST",
          headers: { "content-type": "application/json", "A2A-Version": "1.0" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "SendStreamingMessage",
            params: {
              message: {
                messageId: randomUUID(),
                role: "ROLE_USER",
                parts: [{ text: "Send it" }],
                metadata: { skillId: "approval-gate" },
              },
            },
          }),
        }),
    ],
    [
      "HTTP+JSON 0.3 /v1/message:stream",
      () =>
        fetch(`${t.baseUrl}/v1/message:stream`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            message: {
              messageId: randomUUID(),
              role: "ROLE_USER",
              content: [{ text: "Send it" }],
              metadata: { skillId: "approval-gate" },
            },
          }),
        }),
    ],
    [
      "HTTP+JSON 1.0 /message:stream",
      () =>
        fetch(`${t.baseUrl}/message:stream`, {
          method: "POST",
          headers: { "content-type": "application/a2a+json", "A2A-Version": "1.0" },
          body: JSON.stringify({
            message: {
              messageId: randomUUID(),
              role: "ROLE_USER",
              parts: [{ text: "Send it" }],
              metadata: { skillId: "approval-gate" },
            },
          }),
        }),
    ],
  ] as const)("%s: a streaming send's events carry increasing cursors too", async (_name, send) => {
    const frames = await readSse(await send());
    expect(frames.length).toBeGreaterThan(1);
    const first = frames[0]!.data as Obj;
    const task = (first["result"] ?? first) as Obj;
    const taskId = (task["id"] ?? task["task"]?.["id"]) as string;
    const sequences = frames.map((f) => sequenceOf(taskId, f.id));
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(sequences.length);
  });

  it.each(BINDINGS)(
    "$name: a resume while the task still runs replays nothing twice and continues live to the end",
    async (binding) => {
      const taskId = await waitingTask(t.baseUrl);
      const dropped = await firstFrame(binding, t.baseUrl, taskId);
      const res = await binding.open(t.baseUrl, taskId, { "Last-Event-ID": dropped.id! });
      expect(res.status).toBe(200);
      const resumed = readSse(res);
      await approve(t.baseUrl, taskId);
      const frames = await resumed;
      expect(frames.map((f) => kindOf(binding.item(f)))).not.toContain("task");
      expect(statesOf(binding, frames)).toEqual(["working", "completed"]);
      expect(sequenceOf(taskId, frames[0]!.id)).toBeGreaterThan(sequenceOf(taskId, dropped.id));
    },
  );

  it.each(BINDINGS)(
    "$name: a cursor of another task, or ahead of the log, is unknown: the Task snapshot first, marked, nothing of the other task",
    async (binding) => {
      const other = await waitingTask(t.baseUrl);
      const otherCursor = (await firstFrame(binding, t.baseUrl, other)).id!;
      const taskId = await waitingTask(t.baseUrl);
      const ahead = `${taskId}:${sequenceOf(taskId, (await firstFrame(binding, t.baseUrl, taskId)).id) + 1000}`;
      await approve(t.baseUrl, taskId);
      for (const cursor of [otherCursor, ahead]) {
        const res = await binding.open(t.baseUrl, taskId, { "Last-Event-ID": cursor });
        expect(res.status).toBe(200);
        const frames = await readSse(res);
        // A terminal task: its snapshot, then the stream closes (1.0 would refuse a fresh subscribe).
        expect(frames).toHaveLength(1);
        const item = binding.item(frames[0]!);
        expect(kindOf(item)).toBe("task");
        const task = (item["task"] ?? item) as Obj;
        expect(task["id"]).toBe(taskId);
        expect(stateOf(item)).toBe("completed");
        expect(JSON.stringify(task["metadata"])).toContain('"resume":"snapshot"');
        expect(JSON.stringify(frames)).not.toContain(other);
      }
    },
  );

  it.each(BINDINGS)("$name: a Last-Event-ID that is not a cursor is invalid params (never a 500)", async (binding) => {
    const taskId = await waitingTask(t.baseUrl);
    for (const bad of [
      "abc",
      "-1",
      "12",
      `${taskId}:-3`,
      `${taskId}:x`,
      `${taskId}:1.2.3`,
      `${taskId}:99999999999999999999`,
    ]) {
      const res = await binding.open(t.baseUrl, taskId, { "Last-Event-ID": bad });
      if (binding.name.startsWith("JSON-RPC")) {
        expect(res.status).toBe(200);
        const body = res.headers.get("content-type")!.startsWith("text/event-stream")
          ? ((await readSse(res))[0]!.data as Obj)
          : ((await res.json()) as Obj);
        expect(body["error"]["code"]).toBe(-32602);
        expect(body["error"]["message"]).toMatch(/Last-Event-ID/);
      } else {
        expect(res.status).toBe(400);
        expect(await res.text()).toMatch(/Last-Event-ID/);
      }
    }
  });

  it("a cursor further behind than STREAM_RESUME_MAX_EVENTS gets the Task snapshot first, marked, then the rest live", async () => {
    const app = await startTestApp({ STREAM_RESUME_MAX_EVENTS: "0" });
    try {
      const binding = BINDINGS[0]!;
      const taskId = await waitingTask(app.baseUrl);
      const dropped = await firstFrame(binding, app.baseUrl, taskId);
      // Cursor at the head: within a window of 0, so a plain resume (nothing to replay, then live).
      const live = readSse(await binding.open(app.baseUrl, taskId, { "Last-Event-ID": dropped.id! }));
      await approve(app.baseUrl, taskId);
      const replayed = await live;
      expect(replayed.map((f) => kindOf(binding.item(f)))).not.toContain("task");
      expect(statesOf(binding, replayed)).toEqual(["working", "completed"]);
      // The same cursor is now behind by more than 0 events: the snapshot stands in for the replay.
      const frames = await readSse(await binding.open(app.baseUrl, taskId, { "Last-Event-ID": dropped.id! }));
      expect(frames).toHaveLength(1);
      expect(binding.item(frames[0]!)["metadata"]["openwop"]["resume"]).toBe("snapshot");
      expect(stateOf(binding.item(frames[0]!))).toBe("completed");
    } finally {
      await app.close();
    }
  });

  it("gRPC TaskSubscription with a2a-last-event-id metadata replays what came after the cursor; a bad one is INVALID_ARGUMENT", async () => {
    const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));
    const definition = protoLoader.loadSync("a2a/v1/a2a.proto", {
      includeDirs: [protoDir],
      keepCase: false,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const pkg = grpc.loadPackageDefinition(definition) as any;
    const client = new pkg.a2a.v1.A2AService(`127.0.0.1:${t.port}`, grpc.credentials.createInsecure()) as grpc.Client &
      Record<string, any>;
    const collect = async (taskId: string, cursor: string): Promise<Obj[]> => {
      const metadata = new grpc.Metadata();
      metadata.set("a2a-last-event-id", cursor);
      const events: Obj[] = [];
      for await (const event of client["TaskSubscription"]({ name: `tasks/${taskId}` }, metadata) as AsyncIterable<Obj>)
        events.push(event);
      return events;
    };
    try {
      const taskId = await waitingTask(t.baseUrl);
      const cursor = (await firstFrame(BINDINGS[0]!, t.baseUrl, taskId)).id!;
      await approve(t.baseUrl, taskId);
      const events = await collect(taskId, cursor);
      expect(events.map((e) => e["payload"])).not.toContain("task");
      expect(
        events.filter((e) => e["payload"] === "statusUpdate").map((e) => e["statusUpdate"]["status"]["state"]),
      ).toEqual(["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]);
      const refused = await collect(taskId, "garbage").then(
        () => undefined,
        (err: grpc.ServiceError) => err,
      );
      expect(refused?.code).toBe(grpc.status.INVALID_ARGUMENT);
    } finally {
      client.close();
    }
  });
});

describe("a stream resumes on another instance of the same store", () => {
  const dbName = `resume_${randomUUID().slice(0, 8)}`;
  const clients: MongoClient[] = [];
  let a: TestApp;
  let b: TestApp;
  async function host(): Promise<TestApp> {
    const client = await MongoClient.connect(inject("mongoUri"));
    clients.push(client);
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    return startTestApp({ COMMIT_FEED_POLL_MS: "20" }, store);
  }
  beforeAll(async () => {
    a = await host();
    b = await host();
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await clients[0]?.db(dbName).dropDatabase();
    await Promise.all(clients.map((c) => c.close()));
  });

  it.each([BINDINGS[0]!, BINDINGS[3]!])(
    "$name: a cursor from instance A resumes on instance B, live and after the end",
    async (binding) => {
      const taskId = await waitingTask(a.baseUrl);
      const dropped = await firstFrame(binding, a.baseUrl, taskId);
      // The headers come as soon as B has opened the stream, before anything is replayed.
      const onB = readSse(await binding.open(b.baseUrl, taskId, { "Last-Event-ID": dropped.id! }));
      await approve(a.baseUrl, taskId);
      const live = await onB;
      expect(statesOf(binding, live)).toEqual(["working", "completed"]);
      const after = await readSse(await binding.open(b.baseUrl, taskId, { "Last-Event-ID": dropped.id! }));
      expect(after.map((f) => [f.id, f.data])).toEqual(live.map((f) => [f.id, f.data]));
    },
  );
});

describe("a stream resumes after the instance that served it was killed (SIGKILL)", () => {
  it("JSON-RPC 0.3: the cursor from the killed process replays, on a new process over the same database, what came after it", async () => {
    const dbName = `resume_kill_${randomUUID().slice(0, 8)}`;
    const env = { MONGODB_URI: inject("mongoUri"), MONGODB_DB: dbName, NODE_ENV: "test" };
    const binding = BINDINGS[0]!;
    const first = await startServerProcess(env);
    let second: Awaited<ReturnType<typeof startServerProcess>> | undefined;
    try {
      const taskId = await waitingTask(first.baseUrl);
      const dropped = await firstFrame(binding, first.baseUrl, taskId);
      await first.kill();
      second = await startServerProcess(env);
      const resumed = readSse(await binding.open(second.baseUrl, taskId, { "Last-Event-ID": dropped.id! }));
      await approve(second.baseUrl, taskId);
      const frames = await resumed;
      expect(frames.map((f) => kindOf(binding.item(f)))).not.toContain("task");
      expect(statesOf(binding, frames)).toEqual(["working", "completed"]);
      expect(frames.every((f) => sequenceOf(taskId, f.id) > sequenceOf(taskId, dropped.id))).toBe(true);
    } finally {
      await first.kill().catch(() => undefined);
      await second?.terminate();
      const client = await MongoClient.connect(inject("mongoUri"));
      await client.db(dbName).dropDatabase();
      await client.close();
    }
  }, 90_000);
});
