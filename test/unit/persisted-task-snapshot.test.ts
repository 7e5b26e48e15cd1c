// The machine-definition version stored with every snapshot, and the one restore path that checks it.
import { describe, expect, it } from "vitest";
import type { Message } from "../../src/domain/a2a-types.js";
import { DomainError } from "../../src/domain/errors.js";
import { persistedContextOf, persistTaskSnapshot, restorePersistedSnapshot } from "../../src/machine/persisted-task-snapshot.js";
import { applyTaskEvent, createTaskActor, restoreTaskActor } from "../../src/machine/task-actor.js";
import { TASK_MACHINE_VERSION, taskMachine } from "../../src/machine/task-machine.js";
import { runStatusOf, type TaskSnapshot } from "../../src/machine/task-projection.js";

const at = "2026-03-01T10:00:00.000Z";

function runningActor(message: Message = { messageId: "m-1", role: "user", parts: [{ kind: "text", text: "hello" }] }) {
  const actor = createTaskActor({ taskId: "t-1", contextId: "c-1", workflowId: "echo", tenant: "default", firstNode: "echo", message });
  applyTaskEvent(actor, { type: "START", at });
  return actor;
}

describe("persisted task snapshots", () => {
  it("carry the machine version they were written by, as plain JSON", () => {
    const stored = persistTaskSnapshot(runningActor().getSnapshot());
    expect(stored["machineVersion"]).toBe(TASK_MACHINE_VERSION);
    expect(JSON.parse(JSON.stringify(stored))).toEqual(stored);
  });

  it("are exactly what a JSON round trip of XState's persisted snapshot gives (undefined dropped, toJSON applied)", () => {
    const actor = runningActor({ messageId: "m-1", role: "user", parts: [{ kind: "data", data: { when: new Date(at), list: [1, undefined, "x"], gone: undefined, nested: { n: null } } }], metadata: undefined });
    applyTaskEvent(actor, { type: "NODE_STARTED", at, nodeId: "echo" });
    applyTaskEvent(actor, { type: "NODE_COMPLETED", at, nodeId: "echo", output: { text: "hi", skipped: undefined }, artifacts: [], next: null });
    const viaXState = (snapshot: TaskSnapshot) => ({ ...JSON.parse(JSON.stringify(taskMachine.getPersistedSnapshot(snapshot))), machineVersion: TASK_MACHINE_VERSION });
    expect(persistTaskSnapshot(actor.getSnapshot())).toStrictEqual(viaXState(actor.getSnapshot()));
    applyTaskEvent(actor, { type: "COMPLETE", at });
    expect(actor.getSnapshot().status).toBe("done");
    expect(persistTaskSnapshot(actor.getSnapshot())).toStrictEqual(viaXState(actor.getSnapshot()));
  });

  it("restore to the same state and context, without the version key", () => {
    const actor = runningActor();
    const restored = restoreTaskActor(persistTaskSnapshot(actor.getSnapshot()), "t-1");
    expect(runStatusOf(restored.getSnapshot())).toBe("running");
    expect(JSON.parse(JSON.stringify(restored.getSnapshot().context))).toEqual(JSON.parse(JSON.stringify(actor.getSnapshot().context)));
    expect(restorePersistedSnapshot(persistTaskSnapshot(actor.getSnapshot()))).not.toHaveProperty("machineVersion");
  });

  it("an old snapshot without a version reads as version 1", () => {
    const old = JSON.parse(JSON.stringify(taskMachine.getPersistedSnapshot(runningActor().getSnapshot()))) as Record<string, unknown>;
    expect(old).not.toHaveProperty("machineVersion");
    expect(TASK_MACHINE_VERSION).toBe(1);
    expect(runStatusOf(restoreTaskActor(old, "t-1").getSnapshot())).toBe("running");
    expect(persistedContextOf(old, "t-1").taskId).toBe("t-1");
  });

  it("an unknown version is an internal error naming the task, for actors and for readers alike", () => {
    const future = { ...persistTaskSnapshot(runningActor().getSnapshot()), machineVersion: TASK_MACHINE_VERSION + 41 };
    for (const read of [() => restoreTaskActor(future, "t-42"), () => persistedContextOf(future, "t-42")]) {
      let caught: unknown;
      try {
        read();
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(DomainError);
      expect((caught as DomainError).code).toBe("internal");
      expect((caught as DomainError).message).toContain("task t-42");
      expect((caught as DomainError).message).toContain(`version ${TASK_MACHINE_VERSION + 41}`);
    }
    expect(() => persistedContextOf("not a snapshot", "t-7")).toThrow(/task t-7/);
  });
});
