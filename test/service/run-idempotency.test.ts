import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import type { TaskSupervisor } from "../../src/engine/task-supervisor.js";
import type { RunService } from "../../src/runs/run-service.js";
import { MemoryIdempotencyStore } from "../../src/store/memory-idempotency-store.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

class CountingStore extends MemoryTaskStore {
  creates = 0;
  override async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    this.creates++;
    return super.create(record, events);
  }
}

const ctx: CallContext = { principal: { tenant: "default", id: "alice", scopes: "*" } };

describe("RunService idempotency (crash and race paths)", () => {
  let store: CountingStore;
  let idempotency: MemoryIdempotencyStore;
  let supervisor: TaskSupervisor;
  let runs: RunService;
  let t: TestCore;

  beforeEach(async () => {
    store = new CountingStore();
    idempotency = new MemoryIdempotencyStore();
    t = await startTestCore({}, { store, idempotency });
    supervisor = t.core.supervisor;
    runs = t.core.runs;
  });
  afterEach(() => t.close());

  const request = { workflowId: "conformance-approval", inputs: { n: 1 } };
  const ref = (key: string) => ({ tenant: "default", principal: "alice", operation: "POST /v1/runs", key });

  it("a key reserved by a process that died before creating its run: the retry creates THAT run, once", async () => {
    const first = await runs.startRun(request, ctx, "k-crash");
    // Simulate the crash window: a reservation naming a run id that was never created.
    const orphanId = randomUUID();
    await idempotency.reserve({
      ...(await idempotency.get(ref("k-crash")))!,
      key: "k-orphan",
      resourceId: orphanId,
      state: "reserved",
    });
    const before = store.creates;
    const retry = await runs.startRun(request, ctx, "k-orphan");
    expect(retry).toMatchObject({ status: 201, replayed: true, body: { runId: orphanId } });
    expect(await store.get(orphanId)).not.toBeNull();
    expect(store.creates - before).toBe(1);
    expect((await idempotency.get(ref("k-orphan")))?.state).toBe("completed");
    // And again: now a plain replay, nothing created.
    expect((await runs.startRun(request, ctx, "k-orphan")).body.runId).toBe(orphanId);
    expect(store.creates - before).toBe(1);
    expect(first.body.runId).not.toBe(orphanId);
  });

  it("a reserved key whose run exists (crash after create, before complete): replays without a second run", async () => {
    const first = await runs.startRun(request, ctx, "k-done");
    const { response: _response, ...record } = (await idempotency.get(ref("k-done")))!;
    await idempotency.reserve({ ...record, key: "k-half", state: "reserved" });
    expect(await idempotency.get(ref("k-half"))).toMatchObject({ state: "reserved", resourceId: first.body.runId });
    const before = store.creates;
    const retry = await runs.startRun(request, ctx, "k-half");
    expect(retry.body.runId).toBe(first.body.runId);
    expect(store.creates).toBe(before);
  });

  it("the first request loses the creation race to its own replay and still answers 201 with the same run", async () => {
    const realCreate = supervisor.createTask.bind(supervisor);
    let replay: Promise<unknown> | undefined;
    // While the first request is about to create, a replay with the same key runs to completion first.
    supervisor.createTask = async (args) => {
      if (!replay) {
        replay = runs.startRun(request, ctx, "k-race");
        await replay;
      }
      return realCreate(args);
    };
    const first = await runs.startRun(request, ctx, "k-race");
    const second = (await replay) as Awaited<ReturnType<RunService["startRun"]>>;
    expect(first.status).toBe(201);
    expect(second.body.runId).toBe(first.body.runId);
    expect((await idempotency.get(ref("k-race")))?.state).toBe("completed");
  });

  it("a failed creation releases the key", async () => {
    supervisor.createTask = async () => {
      throw new Error("store down");
    };
    await expect(runs.startRun(request, ctx, "k-fail")).rejects.toThrow("store down");
    expect(await idempotency.get(ref("k-fail"))).toBeNull();
  });
});
