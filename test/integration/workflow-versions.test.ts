import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import type { Principal } from "../../src/auth/principal.js";
import { DomainError } from "../../src/domain/errors.js";
import { loadWorkflowCatalog } from "../../src/engine/workflow-catalog.js";
import { WorkflowVersions } from "../../src/engine/workflow-versions.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { NodeBase, TaskHandler, WorkflowDefinition } from "../../src/workflows/workflow-types.js";
import { openwopClient } from "../support/openwop-client.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

/**
 * Workflow versions (docs/workflows.md "Changing a workflow") on real app instances over one MongoDB (the wire test
 * server): two deploys side by side, each run on its own version; a node whose handler a deploy dropped blocks the
 * run there until an instance that has it takes it; an operator moves a waiting run to another version.
 */

/** Which handler ran for which run and node. */
const ran = new Map<string, string>();
const record =
  (name: string): TaskHandler =>
  async (ctx) => {
    ran.set(`${ctx.taskId}/${ctx.nodeId}`, name);
    return { output: { by: name } };
  };
/** Deploy 1 has `send-v1`; deploy 2 dropped it. */
const HANDLERS_1: Record<string, TaskHandler> = { step: record("step"), "send-v1": record("send-v1") };
const HANDLERS_2: Record<string, TaskHandler> = { step: record("step") };

const quote = (version: string, gate: string, sendHandler: string): WorkflowDefinition<NodeBase> => ({
  id: "quote",
  version,
  name: "Quote",
  description: "draft, a gate, send",
  nodes: [
    { kind: "task", id: "draft", handler: "step" },
    { kind: "approval", id: gate, title: "Approve the quote" },
    { kind: "task", id: "send", handler: sendHandler },
  ] as unknown as NodeBase[],
});
const V1 = quote("1", "approve", "send-v1");
const V2 = quote("2", "review", "step");

async function until<T>(read: () => Promise<T> | T, done: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** openwop_node_blocked_total on an instance's /metrics. */
async function blockedCount(baseUrl: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  return Number(/^openwop_node_blocked_total(?:\{[^}]*\})? (\d+)$/m.exec(text)?.[1] ?? NaN);
}

describe("workflow versions on instances with different deploys over one MongoDB", () => {
  const dbName = `versions_${randomUUID().slice(0, 8)}`;
  const clients: MongoClient[] = [];
  const apps: TestApp[] = [];

  async function host(workflow: WorkflowDefinition<NodeBase>, handlers: Record<string, TaskHandler>) {
    const client = await MongoClient.connect(inject("mongoUri"));
    clients.push(client);
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    const app = await startTestApp(
      { COMMIT_FEED_POLL_MS: "20", LEASE_TTL_MS: "1000", LEASE_HEARTBEAT_MS: "100" },
      store,
      handlers,
      { workflows: [workflow] },
    );
    apps.push(app);
    return { test: app, app: app.app, api: openwopClient(app.baseUrl), store };
  }
  const events = async (api: ReturnType<typeof openwopClient>, runId: string) => {
    const { body } = await api.call("GET", `/v1/runs/${runId}/events/poll?after=-1&timeoutMs=0`);
    return body.events as Array<{ type: string; nodeId?: string; payload: Record<string, any> }>;
  };
  const operator = (tenant: string): Principal => ({ tenant, id: "operator-7", scopes: ["runs:cancel"] });

  let one: Awaited<ReturnType<typeof host>>;
  let two: Awaited<ReturnType<typeof host>>;
  beforeAll(async () => {
    one = await host(V1, HANDLERS_1);
    two = await host(V2, HANDLERS_2);
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await clients[0]?.db(dbName).dropDatabase();
    await Promise.all(clients.map((c) => c.close()));
  });

  it("two deploys side by side: every run finishes on the version it started on, whichever instance it is answered on", async () => {
    const onOne = [await one.api.startRun("quote"), await one.api.startRun("quote")];
    const onTwo = [await two.api.startRun("quote"), await two.api.startRun("quote")];
    for (const runId of onOne) {
      const waiting = await one.api.waitForRun(runId, (s) => s.status === "waiting-approval");
      expect(waiting).toMatchObject({ workflowVersion: "1", currentNodeId: "approve" });
    }
    for (const runId of onTwo) {
      const waiting = await two.api.waitForRun(runId, (s) => s.status === "waiting-approval");
      expect(waiting).toMatchObject({ workflowVersion: "2", currentNodeId: "review" });
    }
    // Each reply goes to the other deploy: its gate is named as the run's own version names it.
    for (const runId of onOne) {
      const reply = await two.api.call("POST", `/v1/runs/${runId}/interrupts/approve`, {
        resumeValue: { action: "accept" },
      });
      expect(reply.status).toBe(200);
    }
    for (const runId of onTwo) {
      const reply = await one.api.call("POST", `/v1/runs/${runId}/interrupts/review`, {
        resumeValue: { action: "accept" },
      });
      expect(reply.status).toBe(200);
    }
    for (const runId of [...onOne, ...onTwo]) await one.api.waitForRun(runId, (s) => s.status === "completed");
    // Version 1's `send` needs `send-v1`, which only deploy 1 has: it ran there, never failed on deploy 2.
    for (const runId of onOne) expect(ran.get(`${runId}/send`)).toBe("send-v1");
    for (const runId of onTwo) expect(ran.get(`${runId}/send`)).toBe("step");
    for (const runId of onOne) {
      const log = await events(one.api, runId);
      expect(log[0]).toMatchObject({ type: "run.created", payload: { workflowVersion: "1" } });
      expect(log.some((e) => e.nodeId === "review")).toBe(false);
    }
  });

  it("a run whose node needs a dropped handler waits, blocked with the reason, and goes on when an instance that has it takes it", async () => {
    const runId = await one.api.startRun("quote");
    await one.api.waitForRun(runId, (s) => s.status === "waiting-approval");
    await one.test.close();
    apps.splice(apps.indexOf(one.test), 1);
    // Only deploy 2 runs now: it lists version 1's live run and the node it cannot run.
    const live = await two.app.supervisor.versions.live();
    expect(live.find((v) => v.version === "1")).toMatchObject({
      workflowId: "quote",
      deployed: false,
      liveRuns: 1,
      lacks: [{ nodeId: "send", reason: expect.stringContaining("send-v1") }],
    });
    // Version 2's runs all ended: it has no live runs to list.
    expect(live.filter((v) => v.workflowId === "quote").map((v) => v.version)).toEqual(["1"]);

    const blockedBefore = await blockedCount(two.test.baseUrl);
    const reply = await two.api.call("POST", `/v1/runs/${runId}/interrupts/approve`, {
      resumeValue: { action: "accept" },
    });
    expect(reply.status).toBe(200);
    const blocked = await until(
      () => two.store.get(runId),
      (r) => two.app.supervisor.reads.contextOf(r!).blocked !== undefined,
      "the run to block",
    );
    expect(blocked!.status).toBe("running");
    expect(two.app.supervisor.reads.contextOf(blocked!).blocked).toMatchObject({
      nodeId: "send",
      reason: expect.stringContaining("send-v1"),
    });
    // Counted once more, by the instance that left it (from 0, like the other counters).
    await until(blockedCount.bind(null, two.test.baseUrl), (n) => n === blockedBefore + 1, "the blocked counter");
    // The console shows it blocked with the reason, on its version, and the graph as that version has it.
    const consoleGet = async (path: string) => {
      const res = await fetch(`${two.test.baseUrl}${path}`);
      return { status: res.status, body: (await res.json()) as any };
    };
    const row = await consoleGet(`/console/api/tasks/${runId}`);
    expect(row.status).toBe(200);
    expect(row.body.task).toMatchObject({
      workflowVersion: "1",
      status: "running",
      blocked: { nodeId: "send", reason: expect.stringContaining('no handler named "send-v1"') },
    });
    const graph = await consoleGet(`/console/api/workflows/quote?version=1`);
    expect(graph.status).toBe(200);
    expect(graph.body).toMatchObject({ id: "quote", version: "1", deployed: false });
    expect(graph.body.nodes.map((n: { id: string }) => n.id)).toEqual(["draft", "approve", "send", "$end"]);
    expect(graph.body.versions).toEqual([
      expect.objectContaining({
        version: "1",
        deployed: false,
        liveRuns: 1,
        lacks: [expect.objectContaining({ nodeId: "send" })],
      }),
    ]);
    const deployed = await consoleGet(`/console/api/workflows/quote`);
    expect(deployed.body).toMatchObject({ version: "2", deployed: true });
    expect(deployed.body.nodes.map((n: { id: string }) => n.id)).toEqual(["draft", "review", "send", "$end"]);
    expect((await consoleGet(`/console/api/workflows/quote?version=7`)).status).toBe(404);
    // It stays blocked on this deploy (not failed, not retried in a loop)...
    await new Promise((r) => setTimeout(r, 400));
    const log = await events(two.api, runId);
    expect(log.filter((e) => e.type === "openwop-a2a-host.node.blocked")).toHaveLength(1);
    expect(log.some((e) => e.type === "run.failed" || (e.type === "node.started" && e.nodeId === "send"))).toBe(false);
    // ...until an instance of deploy 1 comes back and takes it.
    one = await host(V1, HANDLERS_1);
    await one.api.waitForRun(runId, (s) => s.status === "completed");
    expect(ran.get(`${runId}/send`)).toBe("send-v1");
    expect(two.app.supervisor.reads.contextOf((await two.store.get(runId))!).blocked).toBeUndefined();
  });

  it("moves a waiting run to another version by an explicit node mapping: one event with the operator, or a clear refusal and nothing changed", async () => {
    const runId = await one.api.startRun("quote");
    await one.api.waitForRun(runId, (s) => s.status === "waiting-approval");
    const tenant = (await one.store.get(runId))!.tenant;
    const steering = two.app.supervisor.steering;
    const refusals: Array<[Parameters<typeof steering.move>[2], string, RegExp]> = [
      [{ toVersion: "9", nodes: { approve: "review" } }, "invalid-params", /no version "9" stored/],
      [
        { toVersion: "2", nodes: { approve: "nope" } },
        "invalid-params",
        /has no node "nope"; its nodes: draft, review, send/,
      ],
      [
        { toVersion: "2", nodes: { approve: "draft" } },
        "invalid-params",
        /approval node, but "draft" .* is a task node/,
      ],
      [
        { toVersion: "2", nodes: { draft: "draft" } },
        "invalid-params",
        /names no target for the task's current node "approve"/,
      ],
      [{ toVersion: "1", nodes: { approve: "approve" } }, "invalid-params", /already runs version "1"/],
    ];
    const before = (await one.store.get(runId))!;
    for (const [request, code, message] of refusals) {
      const err = await steering.move(runId, operator(tenant), request).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DomainError);
      expect((err as DomainError).code).toBe(code);
      expect((err as DomainError).message).toMatch(message);
    }
    expect((await one.store.get(runId))!.version).toBe(before.version);

    // Over HTTP (the host's own route, docs/operating.md "Steering a task"): a body without a usable mapping is refused.
    const route = `/host/openwop-a2a-host/runs/${runId}:move`;
    const badBody = await two.api.call("POST", route, { toVersion: "2", nodes: { approve: 7 } });
    expect(badBody.status).toBe(400);
    expect(badBody.body).toMatchObject({ error: "validation_error" });
    const wrongNode = await two.api.call("POST", route, { toVersion: "2", nodes: { approve: "draft" } });
    expect(wrongNode.status).toBe(400);
    expect(wrongNode.body.message).toMatch(/a task moves only to a node of the same kind/);
    const moved = await two.api.call("POST", route, {
      toVersion: "2",
      nodes: { approve: "review" },
      reason: "gate renamed",
    });
    expect(moved.status).toBe(202);
    expect(moved.body).toMatchObject({ runId, status: "running", nodeId: "review" });
    expect((await one.store.get(runId))!.workflowVersion).toBe("2");
    const waiting = await one.api.waitForRun(runId, (s) => s.status === "waiting-approval");
    expect(waiting).toMatchObject({ workflowVersion: "2", currentNodeId: "review" });
    const log = await events(one.api, runId);
    expect(log.filter((e) => e.type === "openwop-a2a-host.run.moved")).toEqual([
      expect.objectContaining({
        nodeId: "review",
        payload: expect.objectContaining({
          movedBy: "anonymous",
          fromVersion: "1",
          toVersion: "2",
          fromNodeId: "approve",
          reason: "gate renamed",
        }),
      }),
    ]);
    // The old gate is gone: the reply goes to the new one, and version 2 runs on.
    expect(
      (await one.api.call("POST", `/v1/runs/${runId}/interrupts/approve`, { resumeValue: { action: "accept" } }))
        .status,
    ).toBe(404);
    expect(
      (await one.api.call("POST", `/v1/runs/${runId}/interrupts/review`, { resumeValue: { action: "accept" } })).status,
    ).toBe(200);
    await one.api.waitForRun(runId, (s) => s.status === "completed");
    expect(ran.get(`${runId}/send`)).toBe("step");
  });

  it("two operators moving one run at once on two instances: one moves it, the other is refused, nothing half-applied", async () => {
    const runId = await one.api.startRun("quote");
    await one.api.waitForRun(runId, (s) => s.status === "waiting-approval");
    const tenant = (await one.store.get(runId))!.tenant;
    const request = { toVersion: "2", nodes: { approve: "review" } };
    const outcomes = await Promise.allSettled([
      one.app.supervisor.steering.move(runId, operator(tenant), request),
      two.app.supervisor.steering.move(runId, operator(tenant), request),
    ]);
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    const refused = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(DomainError);
    expect(["invalid-params", "run-state-conflict", "conflict"]).toContain((refused.reason as DomainError).code);
    await one.api.waitForRun(runId, (s) => s.status === "waiting-approval" && s.currentNodeId === "review");
    const log = await events(one.api, runId);
    expect(log.filter((e) => e.type === "openwop-a2a-host.run.moved")).toHaveLength(1);
    expect(log.filter((e) => e.type === "interrupt.requested").map((e) => e.nodeId)).toEqual(["approve", "review"]);
  });

  it("the same version stored with other content refuses the start, naming both", async () => {
    const changed = { ...V1, description: "draft, a gate, send (edited, version not bumped)" };
    const err = await host(changed, HANDLERS_1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/workflow "quote" version "1" is already stored with other content/);
    expect((err as Error).message).toMatch(/digest [0-9a-f]{64}; this deploy's digest [0-9a-f]{64}/);
  });

  it("a version no run uses any more is removed once the last of its runs is gone (retention); the deployed one stays", async () => {
    const client = clients[0]!;
    const store = new MongoTaskStore(client, client.db(dbName));
    const later = new Date(Date.now() + 3 * 3_600_000);
    const versions = new WorkflowVersions({
      catalog: await loadWorkflowCatalog({ builtinDir: "", builtin: [], workflows: [V2], handlers: HANDLERS_2 }),
      store: store.workflowVersions,
      deploy: { handlers: HANDLERS_2, variables: {}, peers: {} },
      clock: () => later,
    });
    const quoteOnly = (removed: Array<{ workflowId: string; version: string }>) =>
      removed.filter((r) => r.workflowId === "quote");
    // Version 1's runs ended but are still retained: it stays.
    expect(quoteOnly(await versions.retire(0))).toEqual([]);
    // Their retention passes (the TTL index removes ended tasks): version 1 goes, version 2 (deployed here) stays.
    await client.db(dbName).collection("tasks").deleteMany({ workflowVersion: "1" });
    expect(quoteOnly(await versions.retire(0))).toEqual([{ workflowId: "quote", version: "1" }]);
    expect(await store.workflowVersions.get("quote", "1")).toBeNull();
    expect(await store.workflowVersions.get("quote", "2")).not.toBeNull();
  });
});
