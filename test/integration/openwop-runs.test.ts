import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import { expectErrorEnvelope, openwopClient, testTokenKeys } from "../support/openwop-client.js";
import { readSse, type SseFrame } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

/** Counts task creations, so a refused request can be shown to have created nothing. */
class CountingStore extends MemoryTaskStore {
  creates = 0;
  override async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    this.creates++;
    return super.create(record, events);
  }
}

const RUN_EVENT_KEYS = new Set(["eventId", "runId", "nodeId", "type", "payload", "timestamp", "sequence"]);

describe("OpenWOP runs API", () => {
  let t: TestApp;
  let store: CountingStore;
  let api: ReturnType<typeof openwopClient>;

  beforeAll(async () => {
    store = new CountingStore();
    t = await startTestApp(
      {
        MAX_BODY_BYTES: "4096",
        INTERRUPT_TOKEN_KEYS: testTokenKeys(),
        DATA_DIR: await mkdtemp(join(tmpdir(), "openwop-runs-")),
      },
      store,
    );
    api = openwopClient(t.baseUrl);
  });
  afterAll(() => t.close());

  const sse = async (
    runId: string,
    headers: Record<string, string> = {},
    query = "",
    until?: (f: SseFrame) => boolean,
  ) => {
    const res = await fetch(`${t.baseUrl}/v1/runs/${runId}/events${query}`, { headers });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    return readSse(res, until);
  };

  it("POST /v1/runs answers 201 {runId, status, eventsUrl, statusUrl}; conformance-noop completes", async () => {
    const res = await api.call("POST", "/v1/runs", { workflowId: "conformance-noop", inputs: { text: "hello" } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(["eventsUrl", "runId", "status", "statusUrl"]);
    const { runId } = res.body;
    expect(res.body.status).toBe("pending");
    expect(res.body.statusUrl).toBe(`/v1/runs/${runId}`);
    expect(res.body.eventsUrl).toBe(`/v1/runs/${runId}/events`);
    expect(res.headers.get("location")).toBe(res.body.statusUrl);
    const done = await api.waitForRun(runId, (s) => s.status === "completed");
    expect(done).toMatchObject({
      runId,
      workflowId: "conformance-noop",
      status: "completed",
      owner: { tenant: "default", principal: "anonymous" },
      eventLogSchemaVersion: 2,
      interrupts: [],
    });
    expect(Date.parse(done.startedAt)).toBeLessThanOrEqual(Date.parse(done.completedAt));
    expect(done.error).toBeUndefined();
    expect(done.currentNodeId).toBeUndefined();
  });

  it("keeps tags, metadata and configurable with the run", async () => {
    const res = await api.call("POST", "/v1/runs", {
      workflowId: "conformance-noop",
      tags: ["a", "b"],
      metadata: { ticket: 7 },
      configurable: { model: "x" },
      tenantId: "default",
    });
    expect(res.status).toBe(201);
    const snapshot = await api.waitForRun(res.body.runId, (s) => s.status === "completed");
    expect(snapshot).toMatchObject({ tags: ["a", "b"], metadata: { ticket: 7 }, configurable: { model: "x" } });
  });

  it("refuses a run in another tenant than the caller's", async () => {
    const res = await api.call("POST", "/v1/runs", { workflowId: "conformance-noop", tenantId: "someone-else" });
    expect(res.status).toBe(403);
    expectErrorEnvelope(res.body, "forbidden");
  });

  it("events SSE: ids are the gap-free sequence, event is the type, data the RunEventDoc; closes at the terminal event", async () => {
    const runId = await api.startRun("conformance-noop");
    await api.waitForRun(runId, (s) => s.status === "completed");
    const frames = await sse(runId);
    const events = frames.map((f) => f.data as Record<string, any>);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i));
    expect(frames.map((f) => f.id)).toEqual(events.map((e) => String(e.sequence)));
    expect(frames.map((f) => f.event)).toEqual(events.map((e) => e.type));
    expect(events[0]!.type).toBe("run.created");
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(["run.started", "node.started", "node.completed"]),
    );
    expect(events.at(-1)!.type).toBe("run.completed");
    for (const e of events) {
      expect(Object.keys(e).every((k) => RUN_EVENT_KEYS.has(k))).toBe(true);
      expect(e).toMatchObject({
        runId,
        eventId: expect.any(String),
        timestamp: expect.any(String),
        payload: expect.any(Object),
      });
    }

    // Last-Event-ID resumes after that sequence; ?after= does the same.
    const resumed = await sse(runId, { "last-event-id": "2" });
    expect(resumed.map((f) => (f.data as { sequence: number }).sequence)).toEqual(
      events.slice(3).map((e) => e.sequence),
    );
    const after = await sse(runId, {}, "?after=1");
    expect(after.map((f) => (f.data as { sequence: number }).sequence)).toEqual(events.slice(2).map((e) => e.sequence));
    // Past the end of a finished run: an empty stream that closes.
    expect(await sse(runId, { "last-event-id": String(events.at(-1)!.sequence) })).toEqual([]);
  });

  it("events SSE follows a live run across an interrupt until it ends", async () => {
    const runId = await api.startRun("conformance-approval");
    const framesPromise = sse(runId);
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    expect(
      (await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: "accept" } })).status,
    ).toBe(200);
    const frames = await framesPromise;
    const types = frames.map((f) => f.event);
    expect(frames.map((f) => Number(f.id))).toEqual(frames.map((_, i) => i));
    expect(types.indexOf("interrupt.requested")).toBeGreaterThan(0);
    expect(types.indexOf("interrupt.resolved")).toBeGreaterThan(types.indexOf("interrupt.requested"));
    expect(types.at(-1)).toBe("run.completed");
  });

  it("events of an unknown run: a plain 404 envelope, not a stream", async () => {
    const res = await api.call("GET", `/v1/runs/${randomUUID()}/events`);
    expect(res.status).toBe(404);
    expectErrorEnvelope(res.body, "not_found");
    const bad = await api.call("GET", `/v1/runs/${randomUUID()}/events?after=abc`);
    expect(bad.status).toBe(400);
    expectErrorEnvelope(bad.body, "validation_error");
  });

  it("events/poll returns {events, nextAfter, terminal} and long-polls for the next commit", async () => {
    const noop = await api.startRun("conformance-noop");
    await api.waitForRun(noop, (s) => s.status === "completed");
    const all = await api.call("GET", `/v1/runs/${noop}/events/poll?timeoutMs=0`);
    expect(all.status).toBe(200);
    const seqs = all.body.events.map((e: { sequence: number }) => e.sequence);
    expect(seqs).toEqual(seqs.map((_: number, i: number) => i));
    expect(all.body.nextAfter).toBe(seqs.at(-1));
    expect(all.body.terminal).toBe(true);
    const page = await api.call("GET", `/v1/runs/${noop}/events/poll?after=1&limit=2`);
    expect(page.body.events.map((e: { sequence: number }) => e.sequence)).toEqual([2, 3]);
    expect(page.body).toMatchObject({ nextAfter: 3, terminal: false });
    const end = await api.call("GET", `/v1/runs/${noop}/events/poll?after=${all.body.nextAfter}`);
    expect(end.body).toEqual({ events: [], nextAfter: all.body.nextAfter, terminal: true });

    const waiting = await api.startRun("conformance-approval");
    const at =
      (await api.waitForRun(waiting, (s) => s.status === "waiting-approval")) &&
      (await api.call("GET", `/v1/runs/${waiting}/events/poll?timeoutMs=0`)).body;
    expect(at.terminal).toBe(false);
    const quick = await api.call("GET", `/v1/runs/${waiting}/events/poll?after=${at.nextAfter}&timeoutMs=0`);
    expect(quick.body).toEqual({ events: [], nextAfter: at.nextAfter, terminal: false });
    const started = Date.now();
    const long = api.call("GET", `/v1/runs/${waiting}/events/poll?after=${at.nextAfter}&timeoutMs=20000`);
    await new Promise((r) => setTimeout(r, 200));
    expect(
      (await api.call("POST", `/v1/runs/${waiting}/interrupts/gate`, { resumeValue: { action: "accept" } })).status,
    ).toBe(200);
    const woke = await long;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(woke.body.events[0]).toMatchObject({ sequence: at.nextAfter + 1, type: "interrupt.resolved" });
    const bad = await api.call("GET", `/v1/runs/${waiting}/events/poll?timeoutMs=999999`);
    expect(bad.status).toBe(400);
    expectErrorEnvelope(bad.body, "validation_error");
  });

  it("Idempotency-Key: same key and body → the same stored 201 with OpenWOP-Idempotent-Replay: true; another body → 409 idempotency_key_mismatch", async () => {
    const key = randomUUID();
    const before = store.creates;
    const first = await api.call(
      "POST",
      "/v1/runs",
      { workflowId: "conformance-approval", inputs: { a: 1, b: [1, 2] } },
      { "idempotency-key": key },
    );
    expect(first.status).toBe(201);
    expect(first.headers.get("openwop-idempotent-replay")).toBeNull();
    // Same JSON, other key order: the same request.
    const again = await api.call(
      "POST",
      "/v1/runs",
      { inputs: { b: [1, 2], a: 1 }, workflowId: "conformance-approval" },
      { "idempotency-key": key },
    );
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("openwop-idempotent-replay")).toBe("true");
    const concurrent = await Promise.all(
      Array.from({ length: 5 }, () =>
        api.call(
          "POST",
          "/v1/runs",
          { workflowId: "conformance-approval", inputs: { a: 1, b: [1, 2] } },
          { "idempotency-key": key },
        ),
      ),
    );
    expect(concurrent.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(concurrent.map((r) => r.body.runId))).toEqual(new Set([first.body.runId]));
    expect(store.creates - before).toBe(1);

    const conflict = await api.call(
      "POST",
      "/v1/runs",
      { workflowId: "conformance-approval", inputs: { a: 2 } },
      { "idempotency-key": key },
    );
    expect(conflict.status).toBe(409);
    expectErrorEnvelope(conflict.body, "idempotency_key_mismatch");
    expect(store.creates - before).toBe(1);

    const otherKey = await api.call(
      "POST",
      "/v1/runs",
      { workflowId: "conformance-approval", inputs: { a: 1, b: [1, 2] } },
      { "idempotency-key": randomUUID() },
    );
    expect(otherKey.status).toBe(201);
    expect(otherKey.body.runId).not.toBe(first.body.runId);

    const badKey = await api.call(
      "POST",
      "/v1/runs",
      { workflowId: "conformance-noop" },
      { "idempotency-key": "x".repeat(300) },
    );
    expect(badKey.status).toBe(400);
    expectErrorEnvelope(badKey.body, "validation_error");
  });

  it("the conformance-idempotent fixture: a replay creates no second run and completes; another nonce under the key is 409", async () => {
    const key = `idempotent-${randomUUID()}`;
    const before = store.creates;
    const body = { workflowId: "conformance-idempotent", inputs: { nonce: "first-attempt" } };
    const calls = [];
    for (let i = 0; i < 3; i++) calls.push(await api.call("POST", "/v1/runs", body, { "idempotency-key": key }));
    expect(calls.map((c) => c.status)).toEqual([201, 201, 201]);
    expect(calls.map((c) => c.headers.get("openwop-idempotent-replay"))).toEqual([null, "true", "true"]);
    expect(new Set(calls.map((c) => c.body.runId)).size).toBe(1);
    expect(store.creates - before).toBe(1);
    expect((await api.waitForRun(calls[0]!.body.runId, (s) => s.status === "completed")).status).toBe("completed");
    const changed = await api.call(
      "POST",
      "/v1/runs",
      { ...body, inputs: { nonce: "second-attempt" } },
      { "idempotency-key": key },
    );
    expect(changed.status).toBe(409);
    expectErrorEnvelope(changed.body, "idempotency_key_mismatch");
  });

  it("conformance-cancellable honours delayMs: it completes after the delay unless cancelled; a bad delayMs fails the run", async () => {
    const short = await api.startRun("conformance-cancellable", { delayMs: 200 });
    const done = await api.waitForRun(
      short,
      (s) => s.status === "completed" || s.status === "failed" || s.status === "cancelled",
    );
    expect(done.status).toBe("completed");
    const bad = await api.startRun("conformance-cancellable", { delayMs: 0 });
    const failed = await api.waitForRun(bad, (s) => s.status === "failed" || s.status === "completed");
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatchObject({ code: "validation_error", message: expect.stringContaining("delayMs") });
  });

  it("a refused request keeps no idempotency record: the key still works for a valid body", async () => {
    const key = randomUUID();
    const refused = await api.call("POST", "/v1/runs", { workflowId: "no-such-workflow" }, { "idempotency-key": key });
    expect(refused.status).toBe(404);
    const ok = await api.call("POST", "/v1/runs", { workflowId: "conformance-noop" }, { "idempotency-key": key });
    expect(ok.status).toBe(201);
  });

  it("cancel: 200 with the run in cancelling, the run ends cancelled, a second cancel is 409 run_terminal", async () => {
    const runId = await api.startRun("conformance-cancellable", { delayMs: 60_000 });
    await api.waitForRun(runId, (s) => s.status === "running");
    const res = await api.call("POST", `/v1/runs/${runId}/cancel`, { reason: "operator says stop" });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("cancelling");
    expect(res.body.runId).toBe(runId);
    const done = await api.waitForRun(runId, (s) => s.status === "cancelled");
    expect(done.metadata).toEqual({ cancelReason: "operator says stop" });
    expect(done.completedAt).toEqual(expect.any(String));
    const again = await api.call("POST", `/v1/runs/${runId}/cancel`);
    expect(again.status).toBe(409);
    expectErrorEnvelope(again.body, "run_terminal");
    expect(again.body.message).toContain("cancelled");
    const unknown = await api.call("POST", `/v1/runs/${randomUUID()}/cancel`);
    expect(unknown.status).toBe(404);
    expectErrorEnvelope(unknown.body, "not_found");
  });

  it("a cancel without a body, while the run waits at a gate", async () => {
    const runId = await api.startRun("conformance-approval");
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    const res = await fetch(`${t.baseUrl}/v1/runs/${runId}/cancel`, { method: "POST" });
    expect(res.status).toBe(200);
    await api.waitForRun(runId, (s) => s.status === "cancelled");
  });

  it("a run started over REST is the A2A task with the same id, and the other way round", async () => {
    const rpc = async (method: string, params: unknown) => {
      const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      return ((await res.json()) as { result: Record<string, any> }).result;
    };
    const runId = await api.startRun("conformance-approval", { text: "ship it" });
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    const task = await rpc("tasks/get", { id: runId });
    expect(task.id).toBe(runId);
    expect(task.status.state).toBe("input-required");
    expect(task.metadata.openwop).toMatchObject({
      runId,
      workflowId: "conformance-approval",
      status: "waiting-approval",
    });
    expect(task.history[0].parts).toEqual([
      { kind: "text", text: "ship it" },
      { kind: "data", data: { text: "ship it" } },
    ]);

    const sent = await rpc("message/send", {
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        parts: [{ kind: "text", text: "hi" }],
        metadata: { skillId: "approval-gate" },
      },
    });
    const snapshot = await api.waitForRun(sent.id, (s) => s.status === "waiting-approval");
    expect(snapshot).toMatchObject({
      runId: sent.id,
      workflowId: "approval-gate",
      currentNodeId: "gate",
      interrupts: [{ nodeId: "gate", kind: "approval" }],
    });
    expect(snapshot.owner.principal).toBeUndefined(); // not started over REST
  });

  it("bad input: clear 4xx envelopes, nothing created, the server stays up", async () => {
    const before = store.creates;
    const post = (body: string, contentType = "application/json") =>
      fetch(`${t.baseUrl}/v1/runs`, { method: "POST", headers: { "content-type": contentType }, body });
    const cases: Array<[Promise<Response>, number, string, string]> = [
      [post("{not json"), 400, "validation_error", "not valid JSON"],
      [post('{"workflowId":"conformance-noop"}', "text/plain"), 415, "unsupported_media_type", "application/json"],
      [post(JSON.stringify({ workflowId: "nope" })), 404, "not_found", '"nope"'],
      [post(JSON.stringify({ inputs: {} })), 400, "validation_error", "workflowId"],
      [post(JSON.stringify({ workflowId: "conformance-noop", inputs: "text" })), 400, "validation_error", "inputs"],
      [post(JSON.stringify({ workflowId: "conformance-noop", surprise: 1 })), 400, "validation_error", "surprise"],
      [
        post(JSON.stringify({ workflowId: "conformance-noop", callbackUrl: "https://x.example" })),
        400,
        "validation_error",
        "callbackUrl",
      ],
      [post(JSON.stringify([1, 2])), 400, "validation_error", "JSON object"],
      [
        post(JSON.stringify({ workflowId: "conformance-noop", inputs: { blob: "x".repeat(10_000) } })),
        413,
        "payload_too_large",
        "4096",
      ],
    ];
    for (const [pending, status, error, mention] of cases) {
      const res = await pending;
      const body = (await res.json()) as Record<string, any>;
      expect({ status: res.status, error: body.error }).toEqual({ status, error });
      expectErrorEnvelope(body, error);
      expect(body.message).toContain(mention);
    }
    expect(store.creates).toBe(before);
    expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
    const unknown = await api.call("GET", `/v1/runs/${randomUUID()}`);
    expect(unknown.status).toBe(404);
    expectErrorEnvelope(unknown.body, "not_found");
  });

  it("GET /v1/workflows/{id} returns the definition; the list names every workflow", async () => {
    const res = await api.call("GET", "/v1/workflows/conformance-approval");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: "conformance-approval",
      nodes: [
        { kind: "approval", id: "gate" },
        { kind: "task", id: "done" },
      ],
    });
    const missing = await api.call("GET", "/v1/workflows/nope");
    expect(missing.status).toBe(404);
    expectErrorEnvelope(missing.body, "not_found");
    const list = await api.call("GET", "/v1/workflows");
    expect(list.body.workflows.map((w: { workflowId: string }) => w.workflowId)).toEqual(
      expect.arrayContaining(["conformance-noop", "conformance-approval", "echo"]),
    );
  });
});
