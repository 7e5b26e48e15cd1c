import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { WorkflowDefinition } from "../../src/workflows/workflow-types.js";
import { openwopClient } from "../support/openwop-client.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

// Every v2 event this host emits, read from a real host on the MongoDB store and checked, envelope and payload,
// against the closed definitions of OpenWOP v2 (the excerpt's $comment names the upstream files and commits).
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const KEY = "acme-key-0123456789abcdef0123456789abcdef";
const V2 = { authorization: `Bearer ${KEY}`, "openwop-version": "2" };
const EMITTED = [
  "run.started",
  "run.completed",
  "run.failed",
  "run.cancelled",
  "run.paused",
  "run.resumed",
  "node.started",
  "node.completed",
  "node.failed",
  "node.suspended",
  "node.resumed",
  "interrupt.requested",
  "interrupt.resolved",
  "artifact.created",
  "output.chunk",
];
const FAILING: WorkflowDefinition = {
  id: "v2-failing",
  name: "Fails",
  description: "One task node whose handler fails on purpose.",
  nodes: [{ kind: "task", id: "boom", handler: "fail", params: { code: "boom_failed", message: "it broke" } }],
};

const validateEvent = (() => {
  // Strict, but for `required` inside if/then (the idiom binds properties defined beside it).
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
  addFormats(ajv);
  const path = new URL("../fixtures/openwop-v2/run-event-payloads-excerpt.schema.json", import.meta.url);
  return ajv.compile(JSON.parse(readFileSync(path, "utf8")) as object);
})();

type Doc = { type: string; sequence: number; nodeId?: string; payload: Record<string, any> } & Record<string, any>;

describe("OpenWOP v2 event payloads follow the closed per-type schemas", () => {
  let client: MongoClient;
  let db: Db;
  let t: TestApp;
  let call: ReturnType<typeof openwopClient>["call"];
  const seen = new Map<string, Doc[]>();

  /** The run's v2 events once `done` holds for them (polled from the start each time). */
  async function eventsOf(runId: string, done: (events: Doc[]) => boolean): Promise<Doc[]> {
    const link = runId.replace("/", "~2F");
    for (let tries = 0; tries < 400; tries++) {
      const poll = await call("GET", `/runs/${link}/events/poll?timeout=1`, undefined, V2);
      expect(poll.status, JSON.stringify(poll.body)).toBe(200);
      const events = poll.body.events as Doc[];
      if (done(events)) return events;
    }
    throw new Error(`run ${runId} never reached the expected events`);
  }
  const has = (type: string) => (events: Doc[]) => events.some((e) => e.type === type);

  /** Checks each event against the excerpt and files it by type. */
  function check(runId: string, events: Doc[]): void {
    for (const event of events) {
      const valid = validateEvent(event);
      expect(
        valid,
        `${event.type} #${event.sequence}: ${JSON.stringify(validateEvent.errors)}\n${JSON.stringify(event)}`,
      ).toBe(true);
      expect(event.runId).toBe(runId);
      seen.set(event.type, [...(seen.get(event.type) ?? []), event]);
    }
  }

  async function start(workflowId: string, inputs?: Record<string, unknown>): Promise<string> {
    const created = await call("POST", "/runs", { workflowId, ...(inputs ? { inputs } : {}) }, V2);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body.runId as string;
  }
  const answer = (runId: string, nodeId: string, resumeValue: unknown) =>
    call("POST", `/runs/${runId.replace("/", "~2F")}/interrupts/${nodeId}`, { resumeValue }, V2);

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"));
    db = client.db(`v2ev_${randomUUID().slice(0, 8)}`);
    const store = new MongoTaskStore(client, db);
    await store.init();
    t = await startTestApp(
      {
        API_KEYS: JSON.stringify([
          {
            id: "acme",
            tenant: "acme",
            scopes: ["runs:create", "runs:read", "runs:cancel", "approvals:respond"],
            key: KEY,
          },
        ]),
      },
      store,
      undefined,
      { workflows: [FAILING] },
    );
    call = openwopClient(t.baseUrl).call;
  });
  afterAll(async () => {
    await t?.close();
    await client?.close();
  });

  it("a completed run with an artifact: run.completed carries outputs, artifact.created its type", async () => {
    const runId = await start("echo", { text: "hello" });
    const events = await eventsOf(runId, has("run.completed"));
    check(runId, events);
    const artifact = events.find((e) => e.type === "artifact.created")!;
    expect(artifact.payload).toMatchObject({ nodeId: "echo", registered: false });
    expect(typeof artifact.payload.artifactId).toBe("string");
    const started = events.find((e) => e.type === "node.started")!;
    expect(started.payload).toEqual({ nodeId: "echo", typeId: "vendor.openwop-a2a-host.task", attempt: 0 });
    const completed = events.at(-1)!;
    expect(completed.type).toBe("run.completed");
    expect(completed.payload.outputs).toEqual({});
    // The artifact ids the stored event lists are carried under the host's extension key, not dropped.
    expect(completed.payload["vendor.openwop-a2a-host.artifactIds"]).toEqual([artifact.payload.artifactId]);
  });

  it("streamed output: each output.chunk names its run, its text and whether it is the last", async () => {
    const runId = await start("streaming-artifact", { text: "one two three four" });
    const events = await eventsOf(runId, has("run.completed"));
    check(runId, events);
    const chunks = events.filter((e) => e.type === "output.chunk");
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((c) => c.payload.isLast)).toEqual([...chunks.slice(1).map(() => false), true]);
    expect(chunks.map((c) => c.payload.chunk).join("")).toContain("four");
    expect(chunks.every((c) => c.payload.runId === runId)).toBe(true);

    // The SSE feed serves the same documents.
    const sse = await fetch(`${t.baseUrl}/runs/${runId.replace("/", "~2F")}/events`, { headers: V2 });
    const frames = await readSse(sse);
    expect(frames.map((f) => f.data)).toEqual(events);
  });

  it("an approval gate, paused and resumed while it waits, then answered", async () => {
    const runId = await start("conformance-approval");
    await eventsOf(runId, has("interrupt.requested"));
    const link = runId.replace("/", "~2F");
    expect((await call("POST", `/runs/${link}:pause`, { reason: "audit" }, V2)).status).toBe(202);
    expect((await call("POST", `/runs/${link}:resume`, {}, V2)).status).toBe(202);
    expect((await answer(runId, "gate", { action: "accept" })).status).toBe(200);
    const events = await eventsOf(runId, has("run.completed"));
    check(runId, events);
    const requested = events.find((e) => e.type === "interrupt.requested")!;
    expect(requested.nodeId).toBe("gate");
    expect(requested.payload).toMatchObject({ kind: "approval", data: { title: "Conformance approval gate" } });
    expect(requested.payload.data.actions).toEqual(["accept", "reject"]);
    const suspended = events.find((e) => e.type === "node.suspended")!;
    expect(suspended.payload.interruptId).toMatch(/^acme\/[A-Za-z0-9._~-]{16,128}$/);
    const resolved = events.find((e) => e.type === "interrupt.resolved")!;
    expect(resolved.payload.interruptId).toBe(suspended.payload.interruptId);
    expect(resolved.payload.resolvedBy).toMatchObject({
      issuer: "urn:openwop:legacy",
      tenant: "acme",
      lane: "api-key",
    });
    expect(resolved.payload.resumeValue).toMatchObject({ action: "accept" });
    const paused = events.find((e) => e.type === "run.paused")!;
    expect(paused.payload).toMatchObject({ reason: "audit", drainPolicy: "drain-current-node" });
    expect(typeof paused.payload["vendor.openwop-a2a-host.pausedBy"]).toBe("string");
    expect(events.some((e) => e.type === "run.resumed")).toBe(true);
  });

  it("a rejected approval fails the run; a clarification is answered", async () => {
    const rejected = await start("approval-gate", { text: "send the report" });
    await eventsOf(rejected, has("interrupt.requested"));
    expect((await answer(rejected, "gate", { action: "reject" })).status).toBe(200);
    const failed = await eventsOf(rejected, has("run.failed"));
    check(rejected, failed);
    const approval = failed.find((e) => e.type === "interrupt.requested")!;
    expect(approval.payload.data).toMatchObject({
      title: "Approve the proposal",
      artifactType: "vendor.openwop-a2a-host.artifact",
    });
    expect(failed.at(-1)!.payload).toMatchObject({ failedNodeId: "gate", error: { code: expect.any(String) } });

    const clarified = await start("clarify", { text: "office hours" });
    await eventsOf(clarified, has("interrupt.requested"));
    expect(
      (await answer(clarified, "ask-audience", { answers: [{ id: "audience", answer: "developers" }] })).status,
    ).toBe(200);
    const events = await eventsOf(clarified, has("run.completed"));
    check(clarified, events);
    const asked = events.find((e) => e.type === "interrupt.requested")!;
    expect(asked.payload.data).toEqual({
      questions: [{ id: "audience", question: "Who is the audience for this message?" }],
    });
    expect(events.find((e) => e.type === "interrupt.resolved")!.payload.kind).toBe("clarification");
  });

  it("a failed node and a cancelled run", async () => {
    const failing = await start("v2-failing");
    const failed = await eventsOf(failing, has("run.failed"));
    check(failing, failed);
    const nodeFailed = failed.find((e) => e.type === "node.failed")!;
    expect(nodeFailed.payload).toMatchObject({ nodeId: "boom", error: { code: "boom_failed", message: "it broke" } });

    const cancellable = await start("conformance-cancellable");
    await eventsOf(cancellable, has("node.started"));
    const cancel = await call(
      "POST",
      `/runs/${cancellable.replace("/", "~2F")}/cancel`,
      { reason: "no longer needed" },
      V2,
    );
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(200);
    const cancelled = await eventsOf(cancellable, has("run.cancelled"));
    check(cancellable, cancelled);
    expect(cancelled.at(-1)!.payload).toMatchObject({ reason: "no longer needed" });
  });

  it("every type the host emits was reached and validated; the excerpt refuses what the stored payloads held", () => {
    expect([...seen.keys()].sort()).toEqual([...EMITTED].sort());
    // The checks above could fail: the stored (OpenWOP 1) shapes break the closed definitions.
    const completed = seen.get("run.completed")![0]!;
    expect(validateEvent({ ...completed, payload: { artifactIds: [], durationMs: 1 } })).toBe(false);
    const started = seen.get("node.started")![0]!;
    expect(validateEvent({ ...started, payload: { nodeId: started.payload.nodeId, attempt: 1 } })).toBe(false);
    const requested = seen.get("interrupt.requested")![0]!;
    expect(validateEvent({ ...requested, payload: { ...requested.payload, runId: requested.runId } })).toBe(false);
    expect(validateEvent({ ...completed, extra: true })).toBe(false);
  });
});
