// The creating instance stalls past its lease between the creating write and node.started (the separate
// write a handler with effects gets), and another instance takes the task over: the send still succeeds
// with the stored task (it exists and is driven elsewhere), and this instance runs none of its nodes.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

/** Another instance takes every task's lease right after it was created, as if the creator stalled past the TTL. */
class TakenOverAfterCreate extends MemoryTaskStore {
  override async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    await super.create(record, events);
    const later = new Date(Date.now() + 60_000);
    expect(
      await this.acquireLease(record.taskId, "other-instance", later, new Date(later.getTime() + 60_000)),
    ).not.toBeNull();
  }
}

describe("creating a task whose lease another instance took right after the creating write", () => {
  let t: TestCore | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("answers the creator with the stored task instead of an error, and leaves the task to its new owner", async () => {
    const dir = await mkdtemp(join(tmpdir(), "create-lease-lost-"));
    await writeFile(
      join(dir, "effectful.yaml"),
      "id: effectful\nname: Effectful\ndescription: one node with an effect\nnodes:\n  - { kind: task, id: act, handler: act }\n",
    );
    const ran: string[] = [];
    const act: TaskHandler = async (ctx) => {
      ran.push(ctx.taskId);
      return { output: {} };
    };
    const store = new TakenOverAfterCreate();
    t = await startTestCore({ WORKFLOWS_DIR: dir, INSTANCE_ID: "creator" }, { store, handlers: { act } });
    const message = {
      kind: "message" as const,
      messageId: randomUUID(),
      role: "user" as const,
      parts: [{ kind: "text" as const, text: "go" }],
    };
    const record = await t.core.supervisor.createTask({
      workflowId: "effectful",
      message,
      principal: { tenant: "default", id: "tester", scopes: [] },
    });
    expect(record).toMatchObject({ workflowId: "effectful", version: 0 });
    const stored = await store.get(record.taskId);
    expect(stored?.lease).toMatchObject({ owner: "other-instance", epoch: 2 });
    // Its node.started was refused (fenced), so nothing ran here.
    expect((await store.readEvents(record.taskId, 0)).map((e) => e.type)).not.toContain("node.started");
    await new Promise((r) => setTimeout(r, 100));
    expect(ran).toEqual([]);
  });
});
