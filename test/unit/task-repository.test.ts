// Staged transitions: applied to the machine under the task's lock, written in one store call, published
// after the write; nothing staged outlives the lock, and nobody sees a staged state before it is stored.
import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { TaskRepository } from "../../src/engine/task-repository.js";
import { TransitionHook, type CommittedTransition } from "../../src/engine/transition-hook.js";
import { createLogger } from "../../src/observability/logger.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent } from "../../src/domain/task-record.js";
import type { TaskRecordChanges } from "../../src/store/task-store.js";

const at = "2026-03-01T10:00:00.000Z";

class RecordingStore extends MemoryTaskStore {
  writes: string[][] = [];
  override async create(record: Parameters<MemoryTaskStore["create"]>[0], events: RunEvent[]) {
    this.writes.push(events.map((e) => e.type));
    return super.create(record, events);
  }
  override async commit(taskId: string, expected: number, changes: TaskRecordChanges, events: RunEvent[]) {
    this.writes.push(events.map((e) => e.type));
    return super.commit(taskId, expected, changes, events);
  }
}

function setup() {
  const store = new RecordingStore();
  const hook = new TransitionHook(createLogger("silent"));
  const published: CommittedTransition[] = [];
  hook.onAny((t) => published.push(t));
  const repository = new TaskRepository({ store, hook, retentionMs: 60_000 });
  const newTask = {
    taskId: "t-1",
    contextId: "c-1",
    workflowId: "echo",
    tenant: "default",
    firstNode: "echo",
    message: { messageId: "m-1", role: "user" as const, parts: [{ kind: "text" as const, text: "hi" }] },
    at,
  };
  return { store, published, repository, newTask };
}

describe("the task repository's staged transitions", () => {
  it("writes a new task and what it did before its first effect in one create, published once after it", async () => {
    const { store, published, repository, newTask } = setup();
    const created = await repository.withLock("t-1", async () => {
      const record = repository.stageCreate(newTask);
      const live = await repository.load("t-1");
      repository.stage(live, { type: "START", at });
      repository.stage(live, { type: "NODE_STARTED", at, nodeId: "echo" });
      // Not stored, not published, not readable yet.
      expect(store.writes).toEqual([]);
      expect(published).toEqual([]);
      await expect(repository.get("t-1", "default")).rejects.toMatchObject({ code: "task-not-found" });
      await repository.flush("t-1");
      return record;
    });
    expect(created).toMatchObject({ version: 0, status: "pending", a2a: { state: "submitted" } });
    expect(store.writes).toEqual([["run.created", "run.started", "node.started"]]);
    expect(published).toHaveLength(1);
    expect(published[0]!.events.map((e) => e.sequence)).toEqual([0, 1, 2]);
    expect(published[0]!.record).toMatchObject({ version: 2, status: "running" });
    expect((await store.get("t-1"))?.version).toBe(2);
  });

  it("flushes what a locked section left staged when it ends", async () => {
    const { store, repository, newTask } = setup();
    await repository.withLock("t-1", async () => repository.stageCreate(newTask));
    await repository.withLock("t-1", async () => {
      const live = await repository.load("t-1");
      repository.stage(live, { type: "START", at });
      repository.stage(live, { type: "NODE_STARTED", at, nodeId: "echo" });
    });
    expect(store.writes).toEqual([["run.created"], ["run.started", "node.started"]]);
    expect((await repository.get("t-1", "default")).version).toBe(2);
  });

  it("drops what a failed locked section staged: nothing written, the task rehydrates its stored state", async () => {
    const { store, published, repository, newTask } = setup();
    await repository.withLock("t-1", async () => repository.stageCreate(newTask));
    const failed = repository.withLock("t-1", async () => {
      const live = await repository.load("t-1");
      repository.stage(live, { type: "START", at });
      repository.stage(live, { type: "COMPLETE", at });
      throw new DomainError("internal", "the caller failed after staging");
    });
    await expect(failed).rejects.toThrow(/failed after staging/);
    expect(store.writes).toEqual([["run.created"]]);
    expect(published).toHaveLength(1);
    const live = await repository.withLock("t-1", () => repository.load("t-1"));
    expect(live.record.version).toBe(0);
    expect(live.actor.getSnapshot().value).toBe("pending");
  });
});
