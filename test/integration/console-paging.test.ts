// The operator console at scale, on the memory store and on MongoDB: every task reachable through a keyset
// cursor (stable while tasks commit), filters and per-state counts, readable rows (title, current node, whom
// a task waits for), the workflow's own graph, a task's detail (node path, interrupt form, redacted events),
// bulk cancel, deep links, and bad input (400 with the reason; 404 for what is not there or not the caller's).
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import type { TaskRecord } from "../../src/domain/task-record.js";
import { seedCopies, touch } from "../support/console-seed.js";
import { waitFor } from "../support/push-receiver.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import "../support/mongo.js";

const KEYS = {
  operator: "paging-operator-key-0123",
  viewer: "paging-viewer-key-012345",
  acme: "paging-acme-user-key-0123",
  globex: "paging-globex-user-key-01",
  ops: "paging-ops-all-tenants-key",
};
const API_KEYS = JSON.stringify([
  {
    id: "operator",
    tenant: "acme",
    key: KEYS.operator,
    scopes: ["console:operate", "approvals:respond", "runs:cancel", "webhooks:manage"],
  },
  { id: "viewer", tenant: "acme", key: KEYS.viewer, scopes: ["console:operate"] },
  {
    id: "acme",
    tenant: "acme",
    key: KEYS.acme,
    scopes: ["runs:create", "runs:read", "runs:cancel", "approvals:respond"],
  },
  { id: "globex", tenant: "globex", key: KEYS.globex, scopes: ["runs:create", "runs:read"] },
  { id: "ops-1", tenant: "ops", key: KEYS.ops, scopes: ["console:operate", "console:all-tenants", "runs:cancel"] },
]);

const PEER_WORKFLOW = `id: remote-review
name: Remote review
description: Asks a peer agent, then a clarification with an optional note, then routes.
nodes:
  - { kind: a2a.invoke, id: ask-peer, agentCardUrl: "https://peer.example.com/.well-known/agent-card.json?key=s", skillId: review }
  - kind: clarification
    id: details
    questions:
      - { id: audience, question: "Who is it for?" }
      - { id: note, question: "Anything else?", required: false }
  - kind: switch
    id: route
    cases:
      - { when: { textContains: "urgent" }, goto: gate }
    default: $end
  - { kind: approval, id: gate, title: Check it, onReject: { goto: details }, actions: [accept, reject] }
`;

const stores: Array<[string, () => Promise<{ store: TaskStore; close: () => Promise<void> }>]> = [
  ["memory store", async () => ({ store: new MemoryTaskStore(), close: async () => {} })],
  [
    "MongoDB",
    async () => {
      const client = await MongoClient.connect(inject("mongoUri"));
      const db = client.db(`console_paging_${randomUUID().slice(0, 8)}`);
      const store = new MongoTaskStore(client, db);
      await store.init();
      return { store, close: async () => (await db.dropDatabase(), await client.close()) };
    },
  ],
];

describe.each(stores)("operator console at scale (%s)", (_name, open) => {
  let t: TestApp;
  let store: TaskStore;
  let closeStore: () => Promise<void>;
  let seeded: TaskRecord[];
  const SEEDED = 230;

  const call = async (method: string, path: string, key?: string, body?: unknown) => {
    const res = await fetch(`${t.baseUrl}${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      body: res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text,
    };
  };
  const startRun = async (key: string, workflowId: string, text = "console") => {
    const { status, body } = await call("POST", "/v1/runs", key, { workflowId, inputs: { text } });
    expect(status).toBe(201);
    return body.runId as string;
  };
  const waitStatus = (taskId: string, status: string) =>
    waitFor(
      async () => {
        const { body } = await call("GET", `/console/api/tasks/${taskId}`, KEYS.ops);
        return body.task?.status === status && body;
      },
      10_000,
      `${taskId} ${status}`,
    );
  /** Every page of a query, following nextCursor. */
  const allPages = async (query: string, key = KEYS.ops, between?: (page: number) => Promise<void>) => {
    const pages: Array<{
      tasks: Array<{ taskId: string; tenant: string; updatedAt: string }>;
      nextCursor: string | null;
      total: number;
      counts?: Record<string, number>;
    }> = [];
    let cursor: string | null = null;
    do {
      const res = await call(
        "GET",
        `/console/api/tasks?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
        key,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      pages.push(res.body);
      cursor = res.body.nextCursor;
      await between?.(pages.length);
    } while (cursor && pages.length < 100);
    return pages;
  };

  beforeAll(async () => {
    ({ store, close: closeStore } = await open());
    const dir = await mkdtemp(join(tmpdir(), "console-wf-"));
    await writeFile(join(dir, "remote-review.yaml"), PEER_WORKFLOW);
    t = await startTestApp({ API_KEYS, WORKFLOWS_DIR: dir }, store);
    // A real finished task, copied many times into two tenants, each copy a second apart.
    const template = await startRun(KEYS.acme, "echo", "Template task\nsecond line");
    await waitStatus(template, "completed");
    seeded = await seedCopies(store, template, SEEDED, {
      tenant: (i) => (i % 3 === 0 ? "globex" : "acme"),
      at: (i) => new Date(Date.parse("2030-01-01T00:00:00.000Z") + i * 1000).toISOString(),
    });
  });
  afterAll(async () => {
    await t?.close();
    await closeStore?.();
  });

  it("pages through every task with a keyset cursor: each once, newest first, with totals and per-state counts", async () => {
    const pages = await allPages("limit=40");
    const ids = pages.flatMap((p) => p.tasks.map((x) => x.taskId));
    expect(new Set(ids).size).toBe(ids.length);
    for (const record of seeded) expect(ids).toContain(record.taskId);
    expect(ids.length).toBe(pages[0]!.total);
    expect(pages.at(-1)!.nextCursor).toBeNull();
    expect(pages.slice(0, -1).every((p) => p.tasks.length === 40)).toBe(true);
    const updated = pages.flatMap((p) => p.tasks.map((x) => x.updatedAt));
    expect([...updated].sort().reverse()).toEqual(updated);
    // Counts per state on the first page only (every filter but the state).
    expect(pages[0]!.counts!["completed"]).toBeGreaterThanOrEqual(SEEDED);
    expect(pages[1]!.counts).toBeUndefined();
    expect(pages[1]!.total).toBeUndefined();
    // The per-tenant key pages its own tenant only.
    const own = (await allPages("limit=100", KEYS.viewer)).flatMap((p) => p.tasks);
    expect(own.every((x) => x.tenant === "acme")).toBe(true);
    expect(own.length).toBe(seeded.filter((r) => r.tenant === "acme").length + 1);
  });

  it("stays stable while tasks commit between pages: no row twice, none of the unchanged ones missed", async () => {
    const query = "limit=25&skill=echo";
    const touched = new Set<string>();
    const pages = await allPages(query, KEYS.ops, async (page) => {
      // Commits while the operator pages: some tasks further down move to the top, new tasks appear.
      if (page > 3) return;
      for (const record of seeded.slice(page * 10, page * 10 + 3)) {
        await touch(store, record);
        touched.add(record.taskId);
      }
      await startRun(KEYS.acme, "echo");
    });
    const ids = pages.flatMap((p) => p.tasks.map((x) => x.taskId));
    expect(new Set(ids).size, "a row appeared twice").toBe(ids.length);
    for (const record of seeded) if (!touched.has(record.taskId)) expect(ids).toContain(record.taskId);
  });

  it("filters by state, skill, tenant (all-tenants grant only), context, id prefix and time ranges", async () => {
    const ids = async (query: string, key = KEYS.ops) =>
      (await allPages(`limit=500&${query}`, key)).flatMap((p) => p.tasks.map((x) => x.taskId));
    const globex = seeded.filter((r) => r.tenant === "globex").map((r) => r.taskId);
    expect((await ids("tenant=globex")).sort()).toEqual(expect.arrayContaining(globex.sort()));
    expect((await ids("tenant=globex")).length).toBe(globex.length);
    expect(await ids("tenant=globex", KEYS.viewer)).toEqual([]);
    const waiting = await startRun(KEYS.acme, "approval-gate", "Pay the invoice\nfrom ACME");
    await waitStatus(waiting, "waiting-approval");
    expect(await ids("state=input-required&skill=approval-gate")).toContain(waiting);
    expect(await ids("state=input-required&skill=echo")).toEqual([]);
    expect(await ids(`q=${waiting.slice(0, 8)}`)).toEqual([waiting]);
    expect(await ids(`contextId=${seeded[4]!.contextId}`)).toContain(seeded[4]!.taskId);
    // Created in [#10, #20) of the seeded tasks; updated before #5.
    const at = (i: number) => seeded[i]!.createdAt;
    const created = await ids(`createdFrom=${at(10)}&createdTo=${encodeURIComponent(at(20))}`);
    expect(created.sort()).toEqual(
      seeded
        .slice(10, 20)
        .map((r) => r.taskId)
        .sort(),
    );
    const early = await ids(`updatedTo=${at(5)}&updatedFrom=2029-12-31T00:00:00Z`);
    expect(early.every((id) => seeded.slice(0, 5).some((r) => r.taskId === id))).toBe(true);
    const filtered = (await call("GET", "/console/api/tasks?skill=approval-gate&state=completed", KEYS.ops)).body;
    expect(filtered.counts["input-required"]).toBeGreaterThanOrEqual(1);
    // The total counts the filtered state only; without a state, every state (the counts' sum).
    expect(filtered.total).toBe(filtered.counts["completed"] ?? 0);
    const waitingOnly = (await call("GET", "/console/api/tasks?skill=approval-gate&state=input-required", KEYS.ops))
      .body;
    expect(waitingOnly.total).toBe(waitingOnly.counts["input-required"]);
    expect(waitingOnly.total).toBe((await ids("state=input-required&skill=approval-gate")).length);
    const anyState = (await call("GET", "/console/api/tasks", KEYS.ops)).body;
    expect(anyState.total).toBe(Object.values(anyState.counts as Record<string, number>).reduce((a, b) => a + b, 0));
    expect(anyState.total).toBe(anyState.counts["completed"] + anyState.counts["input-required"]);
    expect(anyState.total).toBeGreaterThan(waitingOnly.total);
  });

  it("refuses a bad cursor or filter with 400 and the reason", async () => {
    const first = (await call("GET", "/console/api/tasks?limit=5", KEYS.ops)).body;
    const bad: Array<[string, RegExp]> = [
      ["cursor=not-a-cursor!", /cursor/],
      [
        `cursor=${Buffer.from(JSON.stringify({ v: 1, u: "yesterday", i: "x", f: "y" })).toString("base64url")}`,
        /cursor/,
      ],
      [`cursor=${first.nextCursor}&state=completed`, /other filters/],
      [`cursor=${first.nextCursor.slice(0, -3)}`, /cursor/],
      ["limit=0", /limit/],
      ["limit=100000", /limit/],
      ["limit=ten", /limit/],
      ["state=bogus", /state/],
      ["createdFrom=last-tuesday", /createdFrom/],
      ["updatedFrom=2030-01-02T00:00:00Z&updatedTo=2030-01-01T00:00:00Z", /before/],
      ["color=blue", /unknown query parameter/],
      [`skill=${"x".repeat(300)}`, /too long/],
    ];
    for (const [query, reason] of bad) {
      const res = await call("GET", `/console/api/tasks?${query}`, KEYS.ops);
      expect(res.status, query).toBe(400);
      expect(res.body.message, query).toMatch(reason);
    }
    // The cursor of the same filters works.
    expect((await call("GET", `/console/api/tasks?limit=5&cursor=${first.nextCursor}`, KEYS.ops)).status).toBe(200);
  });

  it("rows a person can read: a title, age, the current node and whom the task waits for", async () => {
    const gate = await startRun(
      KEYS.acme,
      "approval-gate",
      "Send the quarterly report to the board\nwith the appendix",
    );
    const clarify = await startRun(KEYS.acme, "clarify", "Announce the new office hours");
    const delay = await startRun(KEYS.acme, "conformance-delay", "Wait a bit");
    await waitStatus(gate, "waiting-approval");
    await waitStatus(clarify, "waiting-input");
    // Tasks of today (the seeded copies are dated 2030).
    const rows = (await call("GET", "/console/api/tasks?limit=50&createdTo=2029-01-01T00:00:00Z", KEYS.viewer)).body
      .tasks as Array<Record<string, any>>;
    const row = (id: string) => rows.find((r) => r.taskId === id)!;
    expect(row(gate)).toMatchObject({
      title: "Approval gate: Send the quarterly report to the board",
      currentNode: { id: "gate", kind: "approval", title: "Approve the proposal" },
      waitingFor: { kind: "approver", label: "an approver: Approve the proposal", nodeId: "gate" },
    });
    expect(row(gate).ageMs).toEqual(expect.any(Number));
    expect(row(clarify)).toMatchObject({
      title: "Clarify: Announce the new office hours",
      waitingFor: { kind: "clarification", label: "an answer: Who is the audience for this message?" },
    });
    const delayed = await waitFor(
      async () => {
        const d = (await call("GET", `/console/api/tasks/${delay}`, KEYS.viewer)).body;
        return d.task.waitingFor && d;
      },
      5_000,
      "the delay's timer",
    );
    expect(delayed.task).toMatchObject({
      currentNode: { id: "wait", kind: "delay" },
      waitingFor: { kind: "timer", until: expect.any(String) },
    });
    const copy = (await call("GET", `/console/api/tasks?q=${seeded[1]!.taskId}`, KEYS.viewer)).body.tasks[0];
    expect(copy).toMatchObject({ title: "Echo: Template task", currentNode: null });
    expect(copy.waitingFor).toBeUndefined();
  });

  it("serves a workflow's own graph: nodes, edges with switch conditions and refine/reject loops, remote nodes; 404 for an unknown one", async () => {
    const gate = (await call("GET", "/console/api/workflows/approval-gate", KEYS.viewer)).body;
    expect(gate.nodes.map((n: { id: string }) => n.id)).toEqual(["prepare", "gate", "finalize", "$end"]);
    expect(gate.nodes[1]).toMatchObject({ id: "gate", kind: "approval", title: "Approve the proposal" });
    expect(gate.edges).toEqual(
      expect.arrayContaining([
        { from: "prepare", to: "gate", kind: "next" },
        { from: "gate", to: "finalize", kind: "accept", condition: "accept" },
        { from: "gate", to: "prepare", kind: "refine", condition: "refine" },
        { from: "finalize", to: "$end", kind: "next" },
      ]),
    );
    const router = (await call("GET", "/console/api/workflows/router", KEYS.viewer)).body;
    expect(router.edges).toEqual(
      expect.arrayContaining([
        { from: "route", to: "review", kind: "case", condition: "messageId ^urgent-" },
        { from: "route", to: "report", kind: "case", condition: 'data.format = "report"' },
        { from: "route", to: "echo", kind: "default", condition: "default" },
        { from: "echo", to: "$end", kind: "next" },
      ]),
    );
    const remote = (await call("GET", "/console/api/workflows/remote-review", KEYS.viewer)).body;
    // The peer's origin only: no userinfo, path or query.
    expect(remote.nodes[0]).toMatchObject({
      id: "ask-peer",
      kind: "a2a.invoke",
      remote: { agent: "https://peer.example.com", skillId: "review" },
    });
    // Scheme, host and port only: no path, no query (a URL with userinfo no longer loads: the egress guard refuses it).
    expect(JSON.stringify(remote)).not.toContain("key=s");
    expect(remote.edges).toEqual(
      expect.arrayContaining([
        { from: "gate", to: "details", kind: "reject", condition: "reject" },
        { from: "route", to: "gate", kind: "case", condition: 'text ∋ "urgent"' },
      ]),
    );
    expect((await call("GET", "/console/api/workflows/nope", KEYS.viewer)).status).toBe(404);
    expect((await call("GET", "/console/api/workflows/echo")).status).toBe(401);
    expect((await call("GET", "/console/api/workflows/echo", KEYS.acme)).status).toBe(403);
  });

  it("a task's detail: its current node and node path, the interrupt as a form, redacted events", async () => {
    const clarify = await startRun(KEYS.acme, "clarify", "Announce the office hours");
    const d = await waitStatus(clarify, "waiting-input");
    expect(d.currentNode).toMatchObject({ id: "ask-audience", kind: "clarification" });
    expect(d.nodePath).toEqual(["ask-audience"]);
    expect(d.interruptForm).toEqual({
      kind: "questions",
      remote: false,
      fields: [{ id: "audience", label: "Who is the audience for this message?", required: true }],
    });
    const gate = await startRun(KEYS.acme, "approval-gate", "Ship it");
    const g = await waitStatus(gate, "waiting-approval");
    expect(g.nodePath).toEqual(["prepare", "gate"]);
    expect(g.interruptForm).toMatchObject({
      kind: "approval",
      title: "Approve the proposal",
      actions: expect.arrayContaining(["accept", "reject", "refine"]),
    });
    expect(g.interruptForm.artifacts).toHaveLength(1);
    expect(g.interruptForm.artifacts[0].artifactId).toBe(g.artifacts[0].artifactId);
    // Answered from the console as the operator: needs approvals:respond, the task's tenant, a valid answer.
    const operator = (await call("GET", `/console/api/tasks/${gate}`, KEYS.operator)).body;
    const answer = (key: string, id: string, node: string, resumeValue: unknown) =>
      call("POST", `/console/api/tasks/${id}/interrupts/${node}`, key, { resumeValue });
    expect((await answer(KEYS.viewer, gate, "gate", { action: "accept" })).status).toBe(403);
    expect((await answer(KEYS.operator, randomUUID(), "gate", { action: "accept" })).status).toBe(404);
    expect((await answer(KEYS.operator, gate, "gate", "accept")).status).toBe(400);
    expect((await answer(KEYS.operator, gate, "gate", { action: "launch" })).body.message).toMatch(/action/);
    const missing = await answer(KEYS.operator, clarify, "ask-audience", { answers: [] });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/missing answers for: audience/);
    expect((await call("GET", `/console/api/tasks/${clarify}`, KEYS.ops)).body.task.status).toBe("waiting-input");
    expect((await answer(KEYS.operator, gate, "gate", { action: "accept" })).status).toBe(200);
    const done = await waitStatus(gate, "completed");
    const resolved = done.events.find((e: { type: string }) => e.type === "interrupt.resolved");
    // A decided interrupt: who decided and with what is in the (redacted) event payload.
    expect(resolved.payload).toMatchObject({ resolvedBy: "apikey:operator", resumeValue: { action: "accept" } });
    expect(done.nodePath).toEqual(["prepare", "gate", "finalize"]);
    expect(done.interruptForm).toBeUndefined();
    expect(done.events.find((e: { type: string }) => e.type === "node.started").payload.attempt).toBe(1);
    expect(JSON.stringify(done.events)).not.toContain(operator.interruptTokens.resolve);
  });

  it("cancels selected tasks in bulk: one result per task, another tenant's task not found, needs runs:cancel", async () => {
    const a = await startRun(KEYS.acme, "approval-gate");
    const b = await startRun(KEYS.acme, "approval-gate");
    const theirs = await startRun(KEYS.globex, "approval-gate");
    await Promise.all([
      waitStatus(a, "waiting-approval"),
      waitStatus(b, "waiting-approval"),
      waitStatus(theirs, "waiting-approval"),
    ]);
    const unknown = randomUUID();
    expect((await call("POST", "/console/api/bulk/cancel", KEYS.viewer, { taskIds: [a] })).status).toBe(403);
    const res = await call("POST", "/console/api/bulk/cancel", KEYS.operator, {
      taskIds: [a, b, theirs, unknown, a],
      reason: "bulk",
    });
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { taskId: string; ok: boolean }) => [r.taskId, r.ok])).toEqual([
      [a, true],
      [b, true],
      [theirs, false],
      [unknown, false],
    ]);
    const [, , other, none] = res.body.results;
    expect(other.error.code).toBe("task-not-found");
    expect(JSON.stringify(other.error).replaceAll(theirs, "{id}")).toBe(
      JSON.stringify(none.error).replaceAll(unknown, "{id}"),
    );
    await Promise.all([waitStatus(a, "cancelled"), waitStatus(b, "cancelled")]);
    expect((await call("GET", `/console/api/tasks/${theirs}`, KEYS.ops)).body.task.status).toBe("waiting-approval");
    for (const body of [
      {},
      { taskIds: [] },
      { taskIds: "x" },
      { taskIds: Array.from({ length: 201 }, () => "x") },
      { taskIds: [a], extra: 1 },
    ]) {
      expect(
        (await call("POST", "/console/api/bulk/cancel", KEYS.operator, body)).status,
        JSON.stringify(body).slice(0, 60),
      ).toBe(400);
    }
  });

  it("serves the page for a deep link to a task, without credentials", async () => {
    const res = await call("GET", `/console/tasks/${seeded[0]!.taskId}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.body).toContain('src="/console/assets/console.js"');
    expect((await call("GET", `/console/api/tasks/${randomUUID()}`, KEYS.ops)).status).toBe(404);
  });
});
