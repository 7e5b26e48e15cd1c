import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { MemoryIdempotencyStore } from "../../src/store/memory-idempotency-store.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { DEFAULT_TASK_SIZE_LIMITS } from "../../src/store/task-size-limits.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

/**
 * The in-memory store is bounded: a terminal task is dropped (head, log, idempotency key, indexes)
 * MEMORY_STORE_RETENTION_MS after it ended, and reads as not found from then on. Counted in entries, not RSS.
 */
describe("memory store retention (MEMORY_STORE_RETENTION_MS)", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("is read from the environment: ten minutes and 1 000 terminal tasks by default", () => {
    expect(loadConfig({}).taskStore).toMatchObject({ memoryRetentionMs: 600_000, memoryMaxTerminalTasks: 1_000 });
    expect(
      loadConfig({ MEMORY_STORE_RETENTION_MS: "5000", MEMORY_STORE_MAX_TERMINAL_TASKS: "20" }).taskStore,
    ).toMatchObject({ memoryRetentionMs: 5_000, memoryMaxTerminalTasks: 20 });
    expect(() => loadConfig({ MEMORY_STORE_RETENTION_MS: "10" })).toThrow(/MEMORY_STORE_RETENTION_MS/);
    expect(() => loadConfig({ MEMORY_STORE_MAX_TERMINAL_TASKS: "0" })).toThrow(/MEMORY_STORE_MAX_TERMINAL_TASKS/);
  });

  it("a finished echo task answers tasks/get until the retention, then not found, and the store holds no entry for it", async () => {
    let nowMs = Date.now();
    const store = new MemoryTaskStore(() => new Date(nowMs), DEFAULT_TASK_SIZE_LIMITS, 30_000);
    t = await startTestApp({}, store);
    const send = async (text: string) =>
      rpc(t!, "message/send", {
        message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text }] },
        configuration: { blocking: true },
      });
    const first = (await send("one")) as { result: { id: string; status: { state: string } } };
    expect(first.result.status.state).toBe("completed");
    expect(store.size).toBe(1);

    nowMs += 29_000;
    expect(((await rpc(t, "tasks/get", { id: first.result.id })) as { result?: { id: string } }).result?.id).toBe(
      first.result.id,
    );

    nowMs += 2_000;
    // The next create sweeps the first task away before anyone reads it again.
    const second = (await send("two")) as { result: { id: string } };
    expect(store.size).toBe(1);
    const gone = (await rpc(t, "tasks/get", { id: first.result.id })) as { error?: { code: number } };
    expect(gone.error?.code).toBe(-32001);
    expect(((await rpc(t, "tasks/get", { id: second.result.id })) as { result?: { id: string } }).result?.id).toBe(
      second.result.id,
    );
  });

  it("drops at most what is due, in the order tasks ended; a task still running is kept; the idempotency key goes too", async () => {
    let nowMs = 1_000_000;
    const store = new MemoryTaskStore(() => new Date(nowMs), DEFAULT_TASK_SIZE_LIMITS, 10_000);
    const farExpiry = new Date(nowMs + 7 * 24 * 3_600_000).toISOString();
    const base = {
      tenant: "t",
      contextId: "c",
      workflowId: "echo",
      status: "completed",
      a2a: { state: "completed" },
      snapshot: {},
      createdAt: "x",
      updatedAt: "x",
      version: 0,
    };
    const record = (taskId: string, extra: object = {}) =>
      ({ ...base, taskId, expireAt: farExpiry, ...extra }) as unknown as Parameters<MemoryTaskStore["create"]>[0];
    await store.create(record("a", { idempotencyKey: "k-a" }), []);
    nowMs += 5_000;
    await store.create(record("b"), []);
    await store.create(record("running", { status: "running", a2a: { state: "working" }, expireAt: null }), []);
    expect(store.size).toBe(3);

    nowMs += 6_000; // a is due (11 s after it ended), b is not (6 s)
    await store.create(record("c"), []);
    expect(store.size).toBe(3);
    expect(await store.get("a")).toBeNull();
    expect(await store.findByIdempotencyKey("k-a")).toBeNull();
    expect(await store.get("b")).not.toBeNull();

    nowMs += 60_000;
    await store.create(record("d", { idempotencyKey: "k-a" }), []); // the key is free again
    expect(store.size).toBe(2);
    expect((await store.get("running"))?.taskId).toBe("running");
    expect((await store.findByIdempotencyKey("k-a"))?.taskId).toBe("d");
    await store.close();
  });

  it("past MEMORY_STORE_MAX_TERMINAL_TASKS the tasks that ended first are dropped, whatever their time", async () => {
    const store = new MemoryTaskStore(() => new Date(1_000_000), DEFAULT_TASK_SIZE_LIMITS, 3_600_000, 3);
    const r = {
      tenant: "t",
      contextId: "c",
      workflowId: "echo",
      status: "completed",
      a2a: { state: "completed" },
      snapshot: {},
      createdAt: "x",
      updatedAt: "x",
      version: 0,
    };
    const expireAt = new Date(1_000_000 + 86_400_000).toISOString();
    for (const taskId of ["t1", "t2", "t3", "t4", "t5"])
      await store.create({ ...r, taskId, expireAt } as unknown as Parameters<MemoryTaskStore["create"]>[0], []);
    await store.create(
      { ...r, taskId: "going", status: "running", a2a: { state: "working" }, expireAt: null } as unknown as Parameters<
        MemoryTaskStore["create"]
      >[0],
      [],
    );
    expect(store.size).toBe(4);
    expect(await store.get("t1")).toBeNull();
    expect(await store.get("t2")).toBeNull();
    expect((await Promise.all(["t3", "t4", "t5", "going"].map((id) => store.get(id)))).map((x) => x?.taskId)).toEqual([
      "t3",
      "t4",
      "t5",
      "going",
    ]);
    await store.close();
  });

  it("an expireAt sooner than the retention still wins (TASK_RETENTION_HOURS)", async () => {
    let nowMs = 1_000_000;
    const store = new MemoryTaskStore(() => new Date(nowMs), DEFAULT_TASK_SIZE_LIMITS, 60_000);
    const r = {
      tenant: "t",
      contextId: "c",
      workflowId: "echo",
      status: "completed",
      a2a: { state: "completed" },
      snapshot: {},
      createdAt: "x",
      updatedAt: "x",
      version: 0,
    };
    await store.create(
      { ...r, taskId: "soon", expireAt: new Date(nowMs + 1_000).toISOString() } as unknown as Parameters<
        MemoryTaskStore["create"]
      >[0],
      [],
    );
    nowMs += 1_000;
    expect(await store.get("soon")).toBeNull();
    expect(store.size).toBe(0);
    await store.close();
  });

  it("the Idempotency-Key records of runs are freed after their expiry by later reservations", async () => {
    let nowMs = 0;
    const store = new MemoryIdempotencyStore(() => new Date(nowMs));
    const rec = (key: string) =>
      ({
        tenant: "t",
        principal: "p",
        operation: "runs.create",
        key,
        fingerprint: "f",
        state: "reserved",
        createdAt: new Date(nowMs).toISOString(),
        expireAt: new Date(nowMs + 1_000).toISOString(),
      }) as unknown as Parameters<MemoryIdempotencyStore["reserve"]>[0];
    expect(await store.reserve(rec("a"))).toBeNull();
    nowMs += 2_000;
    expect(await store.reserve(rec("b"))).toBeNull();
    expect((store as unknown as { records: Map<string, unknown> }).records.size).toBe(1);
  });
});

async function rpc(t: TestApp, method: string, params: unknown): Promise<unknown> {
  const response = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return response.json();
}
