import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import type { Message } from "../../src/domain/a2a-types.js";
import type { HandlerContext, TaskHandler } from "../../src/workflows/workflow-types.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent } from "../../src/domain/task-record.js";
import type { LeaseFence, TaskRecordChanges, TaskStore } from "../../src/store/task-store.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

class ProcessDied extends Error {}

/**
 * Simulates a crash between two writes: once a commit containing `afterEventType` is stored, the "process"
 * dies — this and every later store call of the old app fails, as if it had been killed right there.
 */
class CrashAfter implements TaskStore {
  readonly kind = "memory" as const;
  dead = false;
  constructor(
    private readonly inner: TaskStore,
    private readonly afterEventType: string,
  ) {}
  private check(): void {
    if (this.dead) throw new ProcessDied("process is dead");
  }
  async init() {}
  async create(record: Parameters<TaskStore["create"]>[0], events: RunEvent[]) {
    this.check();
    await this.inner.create(record, events);
    this.maybeDie(events);
  }
  async commit(taskId: string, expected: number, changes: TaskRecordChanges, events: RunEvent[], fence?: LeaseFence) {
    this.check();
    await this.inner.commit(taskId, expected, changes, events, fence);
    this.maybeDie(events);
  }
  private maybeDie(events: RunEvent[]): void {
    if (events.some((e) => e.type === this.afterEventType)) {
      this.dead = true;
      throw new ProcessDied(`crashed after ${this.afterEventType}`);
    }
  }
  async get(id: string) {
    this.check();
    return this.inner.get(id);
  }
  async readEvents(id: string, from: number, limit?: number) {
    this.check();
    return this.inner.readEvents(id, from, limit);
  }
  async readHistory(id: string, from: number, upTo: number) {
    this.check();
    return this.inner.readHistory(id, from, upTo);
  }
  async findHistoryMessage(id: string, messageId: string, upTo: number) {
    this.check();
    return this.inner.findHistoryMessage(id, messageId, upTo);
  }
  async findByIdempotencyKey(key: string) {
    this.check();
    return this.inner.findByIdempotencyKey(key);
  }
  async list(query: Parameters<TaskStore["list"]>[0]) {
    this.check();
    return this.inner.list(query);
  }
  async listActive() {
    this.check();
    return this.inner.listActive();
  }
  async dueTimers(now: Date, limit: number) {
    this.check();
    return this.inner.dueTimers(now, limit);
  }
  async claimTimer(id: string, now: Date, retryAt: Date) {
    this.check();
    return this.inner.claimTimer(id, now, retryAt);
  }
  async acquireLease(id: string, owner: string, now: Date, expiresAt: Date) {
    this.check();
    return this.inner.acquireLease(id, owner, now, expiresAt);
  }
  async renewLeases(owner: string, ids: string[], expiresAt: Date) {
    this.check();
    return this.inner.renewLeases(owner, ids, expiresAt);
  }
  async releaseLease(id: string, owner: string, epoch: number) {
    this.check();
    return this.inner.releaseLease(id, owner, epoch);
  }
  async cancellingTaskIds(ids: string[]) {
    this.check();
    return this.inner.cancellingTaskIds(ids);
  }
  async leaseableTaskIds(now: Date, owner: string, limit: number) {
    this.check();
    return this.inner.leaseableTaskIds(now, owner, limit);
  }
  async close() {}
}

const ctx: CallContext = { principal: { tenant: "default", id: "tester", scopes: "*" } };
const msg = (skillId: string): Message => ({
  messageId: randomUUID(),
  role: "user",
  parts: [{ kind: "text", text: "go" }],
  metadata: { skillId },
});

async function waitFor(t: TestApp, taskId: string, state: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    const record = await t.store.get(taskId);
    if (record?.a2a.state === state) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`task ${taskId} did not reach ${state}: ${(await t.store.get(taskId))?.status}`);
}

async function crashAndRecover(
  skillId: string,
  afterEventType: string,
  handlers?: Record<string, TaskHandler>,
  env: Record<string, string> = {},
) {
  const store = new MemoryTaskStore();
  const crashing = new CrashAfter(store, afterEventType);
  // The same instance restarting: it takes back the task leases it held at once, without waiting for their TTL.
  env = { INSTANCE_ID: "crash-recovery", ...env };
  const first = await startTestApp(env, crashing, handlers);
  const task = await first.app.service
    .sendMessage({ message: msg(skillId), blocking: false }, ctx)
    .catch(() => undefined);
  const deadline = Date.now() + 5000;
  while (!crashing.dead && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  expect(crashing.dead).toBe(true);
  await first.close().catch(() => undefined);
  const [record] = await store.listActive();
  const taskId = task?.id ?? record!.taskId;
  const second = await startTestApp(env, store, handlers);
  return { taskId, store, second };
}

describe("start-up recovery repairs a crash at any step", () => {
  it("crash right after the create (created, started and a pure node's node.started in one write): the node runs again after restart", async () => {
    const { taskId, store, second } = await crashAndRecover("echo", "run.created");
    await waitFor(second, taskId, "completed");
    const log = await store.readEvents(taskId, 0);
    expect(log.slice(0, 3).map((e) => e.type)).toEqual(["run.created", "run.started", "node.started"]);
    expect(log.filter((e) => e.type === "run.started")).toHaveLength(1);
    expect(log.filter((e) => e.type === "node.started").map((e) => e.payload["attempt"])).toEqual([1, 2]);
    expect(log.filter((e) => e.type === "run.completed")).toHaveLength(1);
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
    await second.close();
  });

  it("crash right after the write of node.completed with run.completed: nothing runs again after restart", async () => {
    const { taskId, store, second } = await crashAndRecover("echo", "run.completed");
    const log = await store.readEvents(taskId, 0);
    expect((await store.get(taskId))?.a2a.state).toBe("completed");
    expect(log.filter((e) => e.type === "node.started")).toHaveLength(1);
    expect(log.filter((e) => e.type === "run.completed")).toHaveLength(1);
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
    await second.close();
  });

  it("crash while a node runs: the node runs again with the same idempotency key (at-least-once)", async () => {
    const keys: string[] = [];
    const handlers: Record<string, TaskHandler> = {
      "summarize-request": async (c: HandlerContext) => {
        keys.push(c.idempotencyKey);
        return { output: {}, artifacts: [{ name: "proposal", parts: [{ kind: "text", text: "p" }] }] };
      },
    };
    const { taskId, store, second } = await crashAndRecover("approval-gate", "node.started", handlers);
    await waitFor(second, taskId, "input-required");
    const log = await store.readEvents(taskId, 0);
    expect(log.filter((e) => e.type === "run.started")).toHaveLength(1);
    expect(
      log.filter((e) => e.type === "node.started" && e.nodeId === "prepare").map((e) => e.payload["attempt"]),
    ).toEqual([1, 2]);
    expect(log.filter((e) => e.type === "node.completed" && e.nodeId === "prepare")).toHaveLength(1);
    expect(new Set(keys).size).toBe(1);
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
    await second.close();
  });

  it("crash between cancel requested and cancelled: recovery finishes the cancel", async () => {
    const store = new MemoryTaskStore();
    const crashing = new CrashAfter(store, "run.cancelling");
    const first = await startTestApp({}, crashing);
    const task = await first.app.service.sendMessage({ message: msg("approval-gate"), blocking: true }, ctx);
    await first.app.service.cancelTask(task.id, ctx).catch(() => undefined);
    expect(crashing.dead).toBe(true);
    await first.close().catch(() => undefined);
    expect((await store.get(task.id))?.status).toBe("cancelling");
    const second = await startTestApp({}, store);
    await waitFor(second, task.id, "canceled");
    await second.close();
  });

  it("crash after a durable timer was set: it still fires after restart", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wf-"));
    await writeFile(
      join(dir, "d.yaml"),
      "id: delayed\nname: D\ndescription: d\nnodes:\n  - { kind: delay, id: wait, durationMs: 200 }\n  - { kind: task, id: e, handler: echo }\n",
    );
    const { taskId, second } = await crashAndRecover("delayed", "timer.scheduled", undefined, { WORKFLOWS_DIR: dir });
    await waitFor(second, taskId, "completed");
    await second.close();
  });
});
