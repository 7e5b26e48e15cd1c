// The A2A 1.1 draft (A2A_DRAFT_VERSIONS=1.1): generations on tasks and update events, GetTask long-poll on
// `currentGeneration`, SendMessage `ifGenerationMatch`, on JSON-RPC, HTTP+JSON and gRPC; off by default, when
// `A2A-Version: 1.1` is answered as any unknown version. Real servers, real clients (fetch, connect-node gRPC).
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DEV_PRINCIPAL } from "../../src/auth/dev-authenticator.js";
import { A2AService as V11Service, Role } from "../../src/gen/lf/a2a/v1/draft11/a2a_pb.js";
import type { TaskRecord } from "../../src/domain/task-record.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
const V11 = { "A2A-Version": "1.1" };

const msg = (text: string, skillId?: string, extra: Obj = {}) => ({
  messageId: randomUUID(),
  role: "ROLE_USER",
  parts: [{ text }],
  ...(skillId ? { metadata: { skillId } } : {}),
  ...extra,
});
const approve = (taskId: string, action = "accept") => ({
  messageId: randomUUID(),
  role: "ROLE_USER",
  taskId,
  parts: [{ data: { action } }],
});

async function rpc(t: TestApp, method: string, params: unknown, headers: Record<string, string> = V11): Promise<Obj> {
  const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return (await res.json()) as Obj;
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A task waiting at its approval gate (1.1 JSON-RPC), and its generation. */
async function gate(t: TestApp): Promise<{ id: string; generation: number }> {
  const task = (await rpc(t, "SendMessage", { message: msg("approve me", "approval-gate") }))["result"]["task"];
  expect(task["status"]["state"]).toBe("TASK_STATE_INPUT_REQUIRED");
  return { id: task["id"], generation: Number(task["generation"]) };
}

/**
 * For the races: once armed for a task with phases (e.g. 2, 2), the reads of that task a real store answers are
 * handed back in groups, each group when its last read arrives, so that several callers hold the same record
 * before any of them writes (the interleaving two approvers get when their requests arrive together). A group
 * not complete after 2 s is let go, so a miscounted test fails instead of hanging.
 */
class ReadBarrier {
  private taskId = "";
  private phases: number[] = [];
  private arrived: Array<() => void> = [];

  arm(taskId: string, ...phases: number[]): void {
    this.taskId = taskId;
    this.phases = phases;
  }

  async pass(taskId: string): Promise<void> {
    if (taskId !== this.taskId || this.phases.length === 0) return;
    await new Promise<void>((resolve) => {
      this.arrived.push(resolve);
      const release = () => {
        const group = this.arrived;
        this.arrived = [];
        this.phases.shift();
        for (const go of group) go();
      };
      if (this.arrived.length >= this.phases[0]!) release();
      else if (this.arrived.length === 1) setTimeout(() => this.arrived.includes(resolve) && release(), 2_000);
    });
  }
}

class ReadBarrierStore extends MemoryTaskStore {
  readonly barrier = new ReadBarrier();
  override async get(taskId: string): Promise<TaskRecord | null> {
    const record = await super.get(taskId);
    await this.barrier.pass(taskId);
    return record;
  }
}

class ReadBarrierMongoStore extends MongoTaskStore {
  barrier = new ReadBarrier();
  override async get(taskId: string): Promise<TaskRecord | null> {
    const record = await super.get(taskId);
    await this.barrier.pass(taskId);
    return record;
  }
}

describe("A2A 1.1 draft switched on (A2A_DRAFT_VERSIONS=1.1)", () => {
  let t: TestApp;
  const store = new ReadBarrierStore();
  beforeAll(async () => {
    t = await startTestApp(
      { A2A_DRAFT_VERSIONS: "1.1", A2A_LONG_POLL_MAX_MS: "20000", PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true" },
      store,
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  it("the 1.0 card lists 1.1 interfaces on every binding, and a 1.1 card request is served", async () => {
    const card = (await (
      await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })
    ).json()) as Obj;
    const draft = (card["supportedInterfaces"] as Obj[])
      .filter((i) => i["protocolVersion"] === "1.1")
      .map((i) => i["protocolBinding"]);
    expect(draft).toEqual(["JSONRPC", "GRPC", "HTTP+JSON"]);
    expect(card["supportedInterfaces"][0]["protocolVersion"]).toBe("1.0");
    const asked11 = await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers: V11 });
    expect(asked11.status).toBe(200);
    expect(((await asked11.json()) as Obj)["supportedInterfaces"]).toEqual(card["supportedInterfaces"]);
  });

  it("JSON-RPC: generation 1 at creation, exactly +1 per status or artifact update, one event each; GetTask agrees; 1.0 answers carry none", async () => {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...V11 },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "SendStreamingMessage",
        params: { message: msg("stream it", "streaming-artifact") },
      }),
    });
    const frames = (await readSse(res)).map((f) => (f.data as Obj)["result"] as Obj);
    const task = frames[0]!["task"] as Obj;
    const updates = frames.slice(1).map((f) => (f["statusUpdate"] ?? f["artifactUpdate"]) as Obj);
    expect(updates.length).toBeGreaterThan(2);
    expect(frames.slice(1).some((f) => f["artifactUpdate"])).toBe(true);
    // ProtoJSON writes int64 as a string.
    const generations = updates.map((u) => Number(u["generation"]));
    const first = Number(task["generation"]);
    expect(first).toBeGreaterThanOrEqual(1);
    expect(generations).toEqual(generations.map((_, i) => first + 1 + i));

    const read = (await rpc(t, "GetTask", { id: task["id"] }))["result"] as Obj;
    expect(Number(read["generation"])).toBe(generations.at(-1));
    // The created task (read before anything ran) starts at 1: its only mutation is `submitted`.
    const stored = await t.store.readEvents(task["id"], 0);
    expect(stored.find((e) => e.a2a?.status)?.a2a?.generation).toBe(1);

    // The same task over 1.0 and 0.3: no generation anywhere.
    const v10 = (await rpc(t, "GetTask", { id: task["id"] }, { "A2A-Version": "1.0" }))["result"] as Obj;
    expect(v10).not.toHaveProperty("generation");
    expect(JSON.stringify(v10)).not.toContain("generation");
    const v03 = (await rpc(t, "tasks/get", { id: task["id"] }, {}))["result"] as Obj;
    expect(JSON.stringify(v03)).not.toContain("generation");
    // 0.3 and 1.0 streams share the update objects the 1.1 stream reads its generations from: none on their wire.
    for (const [method, headers, message] of [
      [
        "message/stream",
        {},
        {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: "s" }],
          metadata: { skillId: "streaming-artifact" },
        },
      ],
      ["SendStreamingMessage", { "A2A-Version": "1.0" }, msg("s", "streaming-artifact")],
    ] as const) {
      const stream = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { message } }),
      });
      const text = JSON.stringify((await readSse(stream)).map((f) => f.data));
      expect(text, method).toContain("artifact");
      expect(text, method).not.toContain("generation");
    }
  });

  it("HTTP+JSON: generation on GET /tasks/{id}; a non-numeric or negative currentGeneration is invalid params (400)", async () => {
    const { id, generation } = await gate(t);
    const res = await fetch(`${t.baseUrl}/tasks/${id}`, { headers: V11 });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Obj)["generation"]).toBe(String(generation));
    for (const bad of ["abc", "-1", "1.5"]) {
      const refused = await fetch(`${t.baseUrl}/tasks/${id}?currentGeneration=${bad}`, { headers: V11 });
      expect(refused.status, bad).toBe(400);
      expect(((await refused.json()) as Obj)["error"]["details"][0]["reason"]).toBe("INVALID_PARAMS");
    }
    // A stale generation answers at once with the task as it is.
    const stale = await fetch(`${t.baseUrl}/tasks/${id}?currentGeneration=0`, { headers: V11 });
    expect(((await stale.json()) as Obj)["generation"]).toBe(String(generation));
  });

  it("JSON-RPC: bad currentGeneration / ifGenerationMatch are -32602, never 500", async () => {
    const { id } = await gate(t);
    expect((await rpc(t, "GetTask", { id, currentGeneration: "x" }))["error"]["code"]).toBe(-32602);
    expect((await rpc(t, "GetTask", { id, currentGeneration: -3 }))["error"]["code"]).toBe(-32602);
    expect(
      (await rpc(t, "SendMessage", { message: approve(id), configuration: { ifGenerationMatch: "nope" } }))["error"][
        "code"
      ],
    ).toBe(-32602);
    expect(
      (await rpc(t, "SendMessage", { message: approve(id), configuration: { ifGenerationMatch: -1 } }))["error"][
        "code"
      ],
    ).toBe(-32602);
  });

  it("gRPC with a2a-version 1.1: generation on the task, ifGenerationMatch mismatch is ABORTED and changes nothing, bad input INVALID_ARGUMENT", async () => {
    const client = createClient(V11Service, createGrpcTransport({ baseUrl: t.baseUrl }));
    const headers = { "a2a-version": "1.1" };
    const { id, generation } = await gate(t);
    const task = await client.getTask({ id }, { headers });
    expect(task.generation).toBe(BigInt(generation));
    const reply = {
      messageId: randomUUID(),
      taskId: id,
      role: Role.USER,
      parts: [{ content: { case: "text" as const, value: "accept" } }],
    };
    // With a push config: a mismatch registers nothing either.
    const push = { taskId: "", id: "draft-hook", url: "http://127.0.0.1:9/hook", token: "", tenant: "" };
    const refused = await client
      .sendMessage(
        {
          message: reply,
          configuration: { ifGenerationMatch: BigInt(generation + 5), taskPushNotificationConfig: push },
        },
        { headers },
      )
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.Aborted);
    expect((refused as ConnectError).rawMessage).toContain("generation");
    const after = await client.getTask({ id }, { headers });
    expect(after.generation).toBe(BigInt(generation));
    expect(after.history.some((m) => m.messageId === reply.messageId)).toBe(false);
    expect((await client.listTaskPushNotificationConfigs({ taskId: id }, { headers })).configs).toEqual([]);
    // The matching generation is accepted: the gate is passed, the generation moves on.
    const passed = await client.sendMessage(
      { message: { ...reply, messageId: randomUUID() }, configuration: { ifGenerationMatch: BigInt(generation) } },
      { headers },
    );
    expect(passed.payload.case === "task" && passed.payload.value.generation > BigInt(generation)).toBe(true);
    // A long-poll is cut short by the caller's deadline: the task as it is, not DEADLINE_EXCEEDED.
    const { id: waiting, generation: current } = await gate(t);
    const polled = await client.getTask(
      { id: waiting, currentGeneration: BigInt(current) },
      { headers, timeoutMs: 400 },
    );
    expect(polled.generation).toBe(BigInt(current));
    const negative = await client.getTask({ id, currentGeneration: -1n }, { headers }).catch((e: unknown) => e);
    expect((negative as ConnectError).code).toBe(Code.InvalidArgument);
  });

  it("ifGenerationMatch: two approvers racing on one gate, exactly one wins; the loser gets -32010 and nothing of its reply is kept", async () => {
    const { id, generation } = await gate(t);
    const [a, b] = [approve(id, "accept"), approve(id, "reject")];
    // Both approvers read the task (at `generation`) before either writes: only the check under the task's lock can stop the second.
    store.barrier.arm(id, 2);
    const answers = await Promise.all(
      [a, b].map((message) =>
        rpc(t, "SendMessage", { message, configuration: { ifGenerationMatch: String(generation) } }),
      ),
    );
    const won = answers.filter((r) => r["result"]);
    const lost = answers.filter((r) => r["error"]);
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]!["error"]).toMatchObject({ code: -32010, data: [{ reason: "TASK_GENERATION_MISMATCH" }] });
    const task = (await rpc(t, "GetTask", { id }))["result"] as Obj;
    const loser = answers[0]!["error"] ? a : b;
    expect((task["history"] as Obj[]).some((m) => m["messageId"] === loser.messageId)).toBe(false);
    // A message that creates a task ignores ifGenerationMatch.
    const created = await rpc(t, "SendMessage", {
      message: msg("new", "echo"),
      configuration: { ifGenerationMatch: "42" },
    });
    expect(created["result"]["task"]["id"]).toBeTruthy();
  });

  it("long-poll: waits while the generation is current, answers on the next commit; a caller that goes away releases its waiter", async () => {
    const { id, generation } = await gate(t);
    const service = t.app.service;
    // A thousand long-polls on one task: one shared wait, all answered by the one commit.
    const ctx = { principal: DEV_PRINCIPAL };
    const polls = Array.from({ length: 1000 }, () => service.getTask(id, 0, ctx, { afterGeneration: generation }));
    await until(() => service.longPollsWaiting.callers === 1000, "1000 waiting long-polls");
    expect(service.longPollsWaiting.waits).toBe(1);

    // One over HTTP that goes away: its waiter is released.
    const gone = new AbortController();
    const abandoned = fetch(`${t.baseUrl}/tasks/${id}?currentGeneration=${generation}`, {
      headers: V11,
      signal: gone.signal,
    }).catch(() => "aborted");
    await until(() => service.longPollsWaiting.callers === 1001, "the HTTP long-poll waiting");
    gone.abort();
    expect(await abandoned).toBe("aborted");
    await until(() => service.longPollsWaiting.callers === 1000, "the abandoned long-poll released");

    const http = fetch(`${t.baseUrl}/tasks/${id}?currentGeneration=${generation}`, { headers: V11 });
    await until(() => service.longPollsWaiting.callers === 1001, "the HTTP long-poll waiting");
    await rpc(t, "SendMessage", { message: approve(id) });
    const answered = await Promise.all(polls);
    expect(answered.every((task) => (task.generation ?? 0) > generation)).toBe(true);
    expect(Number(((await (await http).json()) as Obj)["generation"])).toBeGreaterThan(generation);
    expect(service.longPollsWaiting).toEqual({ callers: 0, waits: 0 });
  });
});

describe("A2A 1.1 long-poll cap (A2A_LONG_POLL_MAX_MS)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ A2A_DRAFT_VERSIONS: "1.1", A2A_LONG_POLL_MAX_MS: "200" });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("a long-poll nothing answers ends at the cap with the task as it is", async () => {
    const { id, generation } = await gate(t);
    const res = await fetch(`${t.baseUrl}/tasks/${id}?currentGeneration=${generation}`, { headers: V11 });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Obj)["generation"]).toBe(String(generation));
    expect(t.app.service.longPollsWaiting).toEqual({ callers: 0, waits: 0 });
  });
});

describe("A2A 1.1 draft off (the default)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  const same = (body: unknown, version: string) => JSON.stringify(body).replaceAll(version, "V");

  it("A2A-Version: 1.1 gets exactly the VersionNotSupported answer of any unknown version, on every binding; the card lists no 1.1", async () => {
    const id = (await rpc(t, "SendMessage", { message: msg("x", "echo") }, { "A2A-Version": "1.0" }))["result"]["task"][
      "id"
    ];
    const rpc11 = await rpc(t, "GetTask", { id }, V11);
    expect(rpc11["error"]["code"]).toBe(-32009);
    expect(same(rpc11, "1.1")).toBe(same(await rpc(t, "GetTask", { id }, { "A2A-Version": "9.9" }), "9.9"));

    const rest = async (version: string) => {
      const res = await fetch(`${t.baseUrl}/tasks/${id}`, { headers: { "A2A-Version": version } });
      return { status: res.status, body: same(await res.json(), version) };
    };
    expect(await rest("1.1")).toEqual(await rest("9.9"));
    expect((await rest("1.1")).status).toBe(400);

    const client = createClient(V11Service, createGrpcTransport({ baseUrl: t.baseUrl }));
    const grpc = async (version: string) => {
      const err = (await client
        .getTask({ id }, { headers: { "a2a-version": version } })
        .catch((e: unknown) => e)) as ConnectError;
      return { code: err.code, message: err.rawMessage.replaceAll(version, "V") };
    };
    expect(await grpc("1.1")).toEqual(await grpc("9.9"));
    expect((await grpc("1.1")).code).toBe(Code.FailedPrecondition);

    const card = (await (
      await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })
    ).json()) as Obj;
    expect((card["supportedInterfaces"] as Obj[]).map((i) => i["protocolVersion"])).not.toContain("1.1");
  });
});

describe("A2A 1.1 long-poll across instances (two hosts, one database)", () => {
  const dbName = `draft11_${randomUUID().slice(0, 8)}`;
  const clients: MongoClient[] = [];
  let a: TestApp;
  let b: TestApp;

  // One barrier for both instances' stores: the race below spans them.
  const barrier = new ReadBarrier();
  async function host(): Promise<TestApp> {
    const client = await MongoClient.connect(inject("mongoUri"));
    clients.push(client);
    const store = new ReadBarrierMongoStore(client, client.db(dbName));
    store.barrier = barrier;
    await store.init();
    return startTestApp({ A2A_DRAFT_VERSIONS: "1.1", COMMIT_FEED_POLL_MS: "20" }, store);
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

  it("a long-poll on B is answered by a commit made on A, with the generation A's answer shows", async () => {
    const { id, generation } = await gate(a);
    expect(Number((await rpc(b, "GetTask", { id }))["result"]["generation"])).toBe(generation);
    const poll = rpc(b, "GetTask", { id, currentGeneration: String(generation) });
    await until(() => b.app.service.longPollsWaiting.callers === 1, "B's long-poll waiting");
    const approved = (await rpc(a, "SendMessage", { message: approve(id) }))["result"]["task"] as Obj;
    const seen = (await poll)["result"] as Obj;
    expect(Number(seen["generation"])).toBeGreaterThan(generation);
    // The same generation on both instances, read from the store.
    const final = (await rpc(b, "GetTask", { id }))["result"] as Obj;
    expect(final["generation"]).toBe((await rpc(a, "GetTask", { id }))["result"]["generation"]);
    expect(Number(final["generation"])).toBeGreaterThanOrEqual(Number(approved["generation"]));
  });

  it("two approvers racing on one gate through two instances: both pass every check on the same generation, the store lets one write, the other gets -32010", async () => {
    const { id, generation } = await gate(a);
    // Phase 1: each instance's read before the send; phase 2: each one's read under its own lock. Both then
    // write on the same version: the store refuses one, which answers a mismatch (the generation moved).
    barrier.arm(id, 2, 2);
    const [onA, onB] = [approve(id, "accept"), approve(id, "reject")];
    const answers = await Promise.all([
      rpc(a, "SendMessage", { message: onA, configuration: { ifGenerationMatch: String(generation) } }),
      rpc(b, "SendMessage", { message: onB, configuration: { ifGenerationMatch: String(generation) } }),
    ]);
    expect(answers.filter((r) => r["result"])).toHaveLength(1);
    expect(answers.filter((r) => r["error"]).map((r) => r["error"]["code"])).toEqual([-32010]);
    const loser = answers[0]!["error"] ? onA : onB;
    const task = (await rpc(b, "GetTask", { id }))["result"] as Obj;
    expect((task["history"] as Obj[]).some((m) => m["messageId"] === loser.messageId)).toBe(false);
  });

  it("the generation survives a restart: a new instance on the same database reads it and counts on from it", async () => {
    const { id, generation } = await gate(a);
    await a.close();
    a = await host();
    expect(Number((await rpc(a, "GetTask", { id }))["result"]["generation"])).toBe(generation);
    const approved = (
      await rpc(a, "SendMessage", { message: approve(id), configuration: { ifGenerationMatch: String(generation) } })
    )["result"]["task"] as Obj;
    expect(Number(approved["generation"])).toBeGreaterThan(generation);
    const log = await a.store.readEvents(id, 0);
    const stamped = log.filter((e) => e.a2a?.status || e.a2a?.artifact).map((e) => e.a2a!.generation);
    // One generation per A2A mutation in the log, gap-free from 1 (an event with both updates counts two).
    const mutations = log.reduce((n, e) => n + (e.a2a?.status ? 1 : 0) + (e.a2a?.artifact ? 1 : 0), 0);
    expect(stamped.at(-1)).toBe(mutations);
    expect(Number((await rpc(b, "GetTask", { id }))["result"]["generation"])).toBe(mutations);
  });
});
