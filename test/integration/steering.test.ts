import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import {
  HandlerError,
  type TaskHandler,
  type WorkflowDefinition,
  type NodeBase,
} from "../../src/workflows/workflow-types.js";
import { openwopClient } from "../support/openwop-client.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

/**
 * Operators steer a task (docs/operating.md "Steering a task"): pause and resume (OpenWOP runs.md), retry the
 * failed node and restart from a node (the host's own routes), on two real app instances over one MongoDB.
 */
const HOST = "/host/openwop-a2a-host/runs";

/** Node executions by task and node; `work` waits until the test releases it, and fails when told to. */
const ran = new Map<string, number>();
const releases = new Map<string, Array<() => void>>();
const failNext = new Set<string>();
const count = (taskId: string, nodeId: string) => ran.get(`${taskId}/${nodeId}`) ?? 0;
const handlers: Record<string, TaskHandler> = {
  step: async (ctx) => {
    ran.set(`${ctx.taskId}/${ctx.nodeId}`, count(ctx.taskId, ctx.nodeId) + 1);
    return { output: { ok: true } };
  },
  hold: async (ctx) => {
    ran.set(`${ctx.taskId}/${ctx.nodeId}`, count(ctx.taskId, ctx.nodeId) + 1);
    await new Promise<void>((resolve) => releases.set(ctx.taskId, [...(releases.get(ctx.taskId) ?? []), resolve]));
    if (failNext.delete(ctx.taskId)) throw new HandlerError("work_failed", "the work failed", false);
    return { output: { worked: true } };
  },
};
const WORKFLOW: WorkflowDefinition<NodeBase> = {
  id: "steer-flow",
  name: "Steer flow",
  description: "prepare, a held node, an approval gate, finish",
  nodes: [
    { kind: "task", id: "prepare", handler: "step" },
    { kind: "task", id: "work", handler: "hold" },
    { kind: "approval", id: "gate", title: "Approve it" },
    { kind: "task", id: "finish", handler: "step" },
  ] as unknown as NodeBase[],
};

async function until<T>(read: () => Promise<T> | T, done: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("steering a task on two instances over one MongoDB", () => {
  const dbName = `steer_${randomUUID().slice(0, 8)}`;
  const clients: MongoClient[] = [];
  let a: TestApp;
  let b: TestApp;
  let api: ReturnType<typeof openwopClient>;
  let apiB: ReturnType<typeof openwopClient>;

  async function host(): Promise<TestApp> {
    const client = await MongoClient.connect(inject("mongoUri"));
    clients.push(client);
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    return startTestApp({ COMMIT_FEED_POLL_MS: "20" }, store, handlers, { workflows: [WORKFLOW] });
  }
  beforeAll(async () => {
    a = await host();
    b = await host();
    api = openwopClient(a.baseUrl);
    apiB = openwopClient(b.baseUrl);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await clients[0]?.db(dbName).dropDatabase();
    await Promise.all(clients.map((c) => c.close()));
  });

  const events = async (runId: string) => {
    const { body } = await api.call("GET", `/v1/runs/${runId}/events/poll?after=-1&timeoutMs=0`);
    return body.events as Array<{ type: string; nodeId?: string; payload: Record<string, any> }>;
  };
  const release = (runId: string) =>
    until(
      () => releases.get(runId)?.shift(),
      (r) => r !== undefined,
      "work to start",
    ).then((r) => r!());
  const startHeld = async () => {
    const runId = await api.startRun("steer-flow", { text: "go" });
    await until(
      () => releases.get(runId)?.length ?? 0,
      (n) => n > 0,
      "work to start",
    );
    return runId;
  };

  it("pause (drain-current-node) lets the running node finish, runs nothing after it, refuses replies; resume goes on", async () => {
    const runId = await startHeld();
    const paused = await api.call("POST", `/v1/runs/${runId}:pause`, { reason: "look first" });
    expect(paused.status).toBe(202);
    expect(paused.body).toMatchObject({ runId, status: "paused" });
    expect(typeof paused.body.pausedAt).toBe("string");
    await release(runId);
    // The drained node's completion is recorded; the gate after it is not reached while paused.
    await until(
      events.bind(null, runId),
      (e) => e.some((x) => x.type === "node.completed" && x.nodeId === "work"),
      "work to complete",
    );
    const snapshot = await api.waitForRun(runId, (s) => s.status === "paused");
    expect(snapshot.interrupts).toEqual([]);
    expect((await events(runId)).some((e) => e.type === "interrupt.requested")).toBe(false);
    // A2A sees a working task (it is not waiting for input: replies are refused until it is resumed).
    expect((await a.store.get(runId))!.a2a.state).toBe("working");

    const resumed = await apiB.call("POST", `/v1/runs/${runId}:resume`, {});
    expect(resumed.status).toBe(202);
    expect(resumed.body).toMatchObject({ runId, status: "running" });
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");

    // Paused at the gate: an approval is refused with the status, nothing changes; resume returns to the gate.
    expect((await api.call("POST", `/v1/runs/${runId}:pause`, {})).status).toBe(202);
    expect((await a.store.get(runId))!.a2a.state).toBe("working");
    const reply = await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: "accept" } });
    expect(reply.status).toBe(409);
    expect(reply.body).toMatchObject({ error: "run_state_conflict", details: { runStatus: "paused" } });
    expect((await api.call("POST", `/v1/runs/${runId}:resume`, {})).body).toMatchObject({ status: "waiting-approval" });
    expect((await a.store.get(runId))!.a2a.state).toBe("input-required");
    const approved = await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: "accept" } });
    expect(approved.status).toBe(200);
    await api.waitForRun(runId, (s) => s.status === "completed");

    const log = await events(runId);
    const steering = log.filter((e) => e.type === "run.paused" || e.type === "run.resumed");
    expect(steering.map((e) => [e.type, e.payload["pausedBy"] ?? e.payload["resumedBy"]])).toEqual([
      ["run.paused", "anonymous"],
      ["run.resumed", "anonymous"],
      ["run.paused", "anonymous"],
      ["run.resumed", "anonymous"],
    ]);
    expect(steering[0]!.payload).toMatchObject({
      reason: "look first",
      drainPolicy: "drain-current-node",
      fromStatus: "running",
    });
    expect(steering[3]!.payload).toMatchObject({ toStatus: "waiting-approval" });
    expect(count(runId, "finish")).toBe(1);
  });

  it("pause immediate drops the running node's result; resume runs that node again", async () => {
    const runId = await startHeld();
    expect((await api.call("POST", `/v1/runs/${runId}:pause`, { drainPolicy: "immediate" })).status).toBe(202);
    await release(runId);
    await new Promise((r) => setTimeout(r, 200));
    expect((await events(runId)).some((e) => e.type === "node.completed" && e.nodeId === "work")).toBe(false);
    expect((await api.call("GET", `/v1/runs/${runId}`)).body.status).toBe("paused");
    await api.call("POST", `/v1/runs/${runId}:resume`, {});
    await release(runId);
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    expect(count(runId, "work")).toBe(2);
  });

  it("a paused task fires no timer: its due time leaves the store until it is resumed", async () => {
    const runId = await api.startRun("conformance-delay");
    const waiting = await until(
      () => a.store.get(runId),
      (r) => !!r?.timerDueAt,
      "the delay timer",
    );
    expect((await api.call("POST", `/v1/runs/${runId}:pause`, { reason: "hold the timer" })).status).toBe(202);
    expect((await a.store.get(runId))!.timerDueAt).toBeNull();
    // Well past the due time (2 s), with both instances polling timers every 50 ms: nothing happened.
    await until(
      () => Date.now(),
      (now) => now > Date.parse(waiting!.timerDueAt!) + 500,
      "the due time to pass",
    );
    expect((await api.call("GET", `/v1/runs/${runId}`)).body.status).toBe("paused");
    expect((await events(runId)).some((e) => e.type === "node.completed")).toBe(false);
    await api.call("POST", `/v1/runs/${runId}:resume`, {});
    await api.waitForRun(runId, (s) => s.status === "completed");
  });

  it("an A2A reply to a paused task is refused with UnsupportedOperation and changes nothing", async () => {
    const runId = await startHeld();
    await release(runId);
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    await api.call("POST", `/v1/runs/${runId}:pause`, {});
    const before = await events(runId);
    const res = await fetch(`${a.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            taskId: runId,
            parts: [{ kind: "data", data: { action: "accept" } }],
          },
        },
      }),
    });
    const body = (await res.json()) as { error?: { code: number; message: string } };
    expect(body.error?.code).toBe(-32004);
    expect(body.error?.message).toContain("paused by an operator");
    expect(await events(runId)).toEqual(before);
  });

  it("two operators pausing at once on two instances: one 202, one 409 run_state_conflict, one run.paused", async () => {
    const runId = await startHeld();
    const answers = await Promise.all([
      api.call("POST", `/v1/runs/${runId}:pause`, {}),
      apiB.call("POST", `/v1/runs/${runId}:pause`, {}),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([202, 409]);
    const loser = answers.find((r) => r.status === 409)!;
    expect(loser.body).toMatchObject({ error: "run_state_conflict", details: { runStatus: "paused" } });
    expect((await events(runId)).filter((e) => e.type === "run.paused")).toHaveLength(1);
    // Two resumes at once: the same.
    const resumes = await Promise.all([
      api.call("POST", `/v1/runs/${runId}:resume`, {}),
      apiB.call("POST", `/v1/runs/${runId}:resume`, {}),
    ]);
    expect(resumes.map((r) => r.status).sort()).toEqual([202, 409]);
    expect((await events(runId)).filter((e) => e.type === "run.resumed")).toHaveLength(1);
    await release(runId);
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
  });

  it("an instance holding an older copy of the task decides on the task as stored", async () => {
    const runId = await startHeld();
    // B reads the running task (and keeps it in memory) while refusing a resume; A then pauses it.
    expect((await apiB.call("POST", `/v1/runs/${runId}:resume`, {})).status).toBe(409);
    expect((await api.call("POST", `/v1/runs/${runId}:pause`, {})).status).toBe(202);
    await release(runId);
    await until(
      () => events(runId),
      (e) => e.some((x) => x.type === "node.completed" && x.nodeId === "work"),
      "the drained node",
    );
    const resumed = await apiB.call("POST", `/v1/runs/${runId}:resume`, {});
    expect(resumed.status).toBe(202);
    expect(resumed.body).toMatchObject({ status: "running" });
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    expect(count(runId, "work")).toBe(1);
  });

  it("retry runs the failed node again (a new attempt); the run goes on", async () => {
    const runId = await api.startRun("steer-flow", { text: "go" });
    failNext.add(runId);
    await release(runId);
    const failed = await api.waitForRun(runId, (s) => s.status === "failed");
    expect(failed.error).toMatchObject({ code: "work_failed" });
    const retried = await api.call("POST", `${HOST}/${runId}:retry`);
    expect(retried.status).toBe(202);
    expect(retried.body).toMatchObject({ runId, nodeId: "work" });
    await release(runId);
    const snapshot = await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    expect(snapshot.error).toBeUndefined();
    expect(count(runId, "work")).toBe(2);
    const log = await events(runId);
    const retry = log.find((e) => e.type === "openwop-a2a-host.run.retried")!;
    expect(retry).toMatchObject({
      nodeId: "work",
      payload: { retriedBy: "anonymous", error: { code: "work_failed" } },
    });
    // The failure stays in the history, before the retry.
    expect(log.findIndex((e) => e.type === "run.failed")).toBeLessThan(log.indexOf(retry));
    // A stream from the start does not end at the failure the retry undid.
    const frames = await readSse(
      await fetch(`${a.baseUrl}/v1/runs/${runId}/events`),
      (f) => f.event === "interrupt.requested",
    );
    expect(frames.map((f) => f.event)).toContain("openwop-a2a-host.run.retried");
    const attempts = log
      .filter((e) => e.type === "node.started" && e.nodeId === "work")
      .map((e) => e.payload["attempt"]);
    expect(attempts).toEqual([1, 2]);
  });

  it("restart from an earlier node is a new visit; the history stays", async () => {
    const runId = await startHeld();
    await release(runId);
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    const before = (await events(runId)).length;
    const restarted = await apiB.call("POST", `${HOST}/${runId}:restart`, { nodeId: "prepare", reason: "redo" });
    expect(restarted.status).toBe(202);
    expect(restarted.body).toMatchObject({ runId, status: "running", nodeId: "prepare" });
    await release(runId);
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    expect(count(runId, "prepare")).toBe(2);
    const log = await events(runId);
    expect(log.length).toBeGreaterThan(before);
    expect(log.find((e) => e.type === "openwop-a2a-host.run.restarted")).toMatchObject({
      nodeId: "prepare",
      payload: { restartedBy: "anonymous", fromNodeId: "gate", reason: "redo" },
    });
    expect(log.filter((e) => e.type === "node.completed" && e.nodeId === "prepare")).toHaveLength(2);
  });

  it("refuses bad input clearly and changes nothing", async () => {
    const runId = await startHeld();
    const refusals: Array<[string, string, unknown, number, string, string]> = [
      ["POST", `${HOST}/${runId}:restart`, { nodeId: "nope" }, 400, "validation_error", 'no node "nope"'],
      ["POST", `${HOST}/${runId}:restart`, { nodeId: "finish" }, 400, "validation_error", "has not reached"],
      ["POST", `${HOST}/${runId}:restart`, { nodeId: "prepare" }, 409, "run_state_conflict", "pause it first"],
      ["POST", `${HOST}/${runId}:restart`, {}, 400, "validation_error", "nodeId"],
      ["POST", `${HOST}/${runId}:retry`, undefined, 409, "run_state_conflict", "only a failed task"],
      ["POST", `/v1/runs/${runId}:resume`, {}, 409, "run_state_conflict", "not paused"],
      ["POST", `/v1/runs/${runId}:pause`, { drainPolicy: "later" }, 400, "validation_error", "drainPolicy"],
      ["POST", `/v1/runs/${runId}:pause`, { extra: 1 }, 400, "validation_error", "extra"],
      ["POST", `/v1/runs/${randomUUID()}:pause`, {}, 404, "not_found", "not found"],
    ];
    const eventsBefore = await events(runId);
    for (const [method, path, body, status, error, text] of refusals) {
      const answer = await api.call(method, path, body);
      expect([path, answer.status, answer.body.error]).toEqual([path, status, error]);
      expect(answer.body.message).toContain(text);
    }
    expect(await events(runId)).toEqual(eventsBefore);
    await release(runId);
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    await api.call("POST", `/v1/runs/${runId}/cancel`, {});
    await api.waitForRun(runId, (s) => s.status === "cancelled");
    const terminal = await api.call("POST", `/v1/runs/${runId}:pause`, {});
    expect(terminal.status).toBe(409);
    expect(terminal.body).toMatchObject({ error: "run_terminal", details: { runStatus: "cancelled" } });
    const restart = await api.call("POST", `${HOST}/${runId}:restart`, { nodeId: "prepare" });
    expect(restart.body).toMatchObject({ error: "run_terminal" });
  });
});
