// The machine-definition version stored with every snapshot, and the one restore path that checks it.
import { describe, expect, it } from "vitest";
import type { Message } from "../../src/domain/a2a-types.js";
import { DomainError } from "../../src/domain/errors.js";
import {
  persistedContextOf,
  persistTaskSnapshot,
  restorePersistedSnapshot,
} from "../../src/machine/persisted-task-snapshot.js";
import { applyTaskEvent, createTaskActor, restoreTaskActor } from "../../src/machine/task-actor.js";
import { RECENT_HISTORY, TASK_MACHINE_VERSION, taskMachine } from "../../src/machine/task-machine.js";
import { runStatusOf, type TaskSnapshot } from "../../src/machine/task-projection.js";

const at = "2026-03-01T10:00:00.000Z";

function runningActor(message: Message = { messageId: "m-1", role: "user", parts: [{ kind: "text", text: "hello" }] }) {
  const actor = createTaskActor({
    taskId: "t-1",
    contextId: "c-1",
    workflowId: "echo",
    tenant: "default",
    firstNode: "echo",
    message,
  });
  applyTaskEvent(actor, { type: "START", at });
  return actor;
}

/** A running echo task as machine version 1 stored it: the whole history in the context, no count, no request. */
function versionOneSnapshot(messages: number): Record<string, unknown> {
  const current = JSON.parse(JSON.stringify(taskMachine.getPersistedSnapshot(runningActor().getSnapshot()))) as {
    context: Record<string, unknown>;
  };
  const { request: _request, historyCount: _count, ...context } = current.context;
  const history: Message[] = Array.from({ length: messages }, (_, i) => ({
    messageId: `m-${i}`,
    role: i % 2 === 0 ? "user" : "agent",
    parts: [{ kind: "text", text: `message ${i}` }],
  }));
  return { ...current, context: { ...context, history } };
}

describe("persisted task snapshots", () => {
  it("carry the machine version they were written by, as plain JSON", () => {
    const stored = persistTaskSnapshot(runningActor().getSnapshot());
    expect(stored["machineVersion"]).toBe(TASK_MACHINE_VERSION);
    expect(JSON.parse(JSON.stringify(stored))).toEqual(stored);
  });

  it("are exactly what a JSON round trip of XState's persisted snapshot gives (undefined dropped, toJSON applied)", () => {
    const actor = runningActor({
      messageId: "m-1",
      role: "user",
      parts: [
        { kind: "data", data: { when: new Date(at), list: [1, undefined, "x"], gone: undefined, nested: { n: null } } },
      ],
      metadata: undefined,
    });
    applyTaskEvent(actor, { type: "NODE_STARTED", at, nodeId: "echo" });
    applyTaskEvent(actor, {
      type: "NODE_COMPLETED",
      at,
      nodeId: "echo",
      output: { text: "hi", skipped: undefined },
      artifacts: [],
      next: null,
    });
    const viaXState = (snapshot: TaskSnapshot) => ({
      ...JSON.parse(JSON.stringify(taskMachine.getPersistedSnapshot(snapshot))),
      machineVersion: TASK_MACHINE_VERSION,
    });
    expect(persistTaskSnapshot(actor.getSnapshot())).toStrictEqual(viaXState(actor.getSnapshot()));
    applyTaskEvent(actor, { type: "COMPLETE", at });
    expect(actor.getSnapshot().status).toBe("done");
    expect(persistTaskSnapshot(actor.getSnapshot())).toStrictEqual(viaXState(actor.getSnapshot()));
  });

  it("made after an earlier copy: the context members a transition left alone are that copy's, the rest fresh, all equal to a copy from scratch", () => {
    const actor = runningActor({
      messageId: "m-1",
      role: "user",
      parts: [{ kind: "data", data: { when: new Date(at), list: [1, undefined], gone: undefined } }],
    });
    const first = actor.getSnapshot();
    const firstCopy = persistTaskSnapshot(first);
    // The same snapshot again (a create written after it was staged): the same copy.
    expect(persistTaskSnapshot(first, { source: first, persisted: firstCopy })).toBe(firstCopy);
    applyTaskEvent(actor, { type: "NODE_STARTED", at, nodeId: "echo" });
    applyTaskEvent(actor, {
      type: "NODE_COMPLETED",
      at,
      nodeId: "echo",
      output: { text: "hi", skipped: undefined },
      artifacts: [],
      next: null,
    });
    const second = actor.getSnapshot();
    const shared = persistTaskSnapshot(second, { source: first, persisted: firstCopy });
    expect(shared).toStrictEqual(persistTaskSnapshot(second));
    const context = (copy: Record<string, unknown>) => copy["context"] as Record<string, unknown>;
    expect(context(shared)["request"]).toBe(context(firstCopy)["request"]);
    expect(context(shared)["outputs"]).not.toBe(context(firstCopy)["outputs"]);
    expect(context(shared)["outputs"]).toEqual({ echo: { text: "hi" } });
    // Frozen all through, shared members included.
    expect(Object.isFrozen(shared)).toBe(true);
    expect(Object.isFrozen(context(shared))).toBe(true);
    expect(Object.isFrozen((context(shared)["outputs"] as Record<string, object>)["echo"])).toBe(true);
    // A previous copy of another task's snapshot shares nothing that differs.
    const other = runningActor({
      messageId: "m-2",
      role: "user",
      parts: [{ kind: "text", text: "other" }],
    }).getSnapshot();
    expect(persistTaskSnapshot(other, { source: first, persisted: firstCopy })).toStrictEqual(
      persistTaskSnapshot(other),
    );
  });

  it("restore to the same state and context, without the version key", () => {
    const actor = runningActor();
    const restored = restoreTaskActor(persistTaskSnapshot(actor.getSnapshot()), "t-1");
    expect(runStatusOf(restored.getSnapshot())).toBe("running");
    expect(JSON.parse(JSON.stringify(restored.getSnapshot().context))).toEqual(
      JSON.parse(JSON.stringify(actor.getSnapshot().context)),
    );
    expect(restorePersistedSnapshot(persistTaskSnapshot(actor.getSnapshot()))).not.toHaveProperty("machineVersion");
  });

  it("an old snapshot without a version reads as version 1, and is migrated to the current version", () => {
    const old = versionOneSnapshot(3);
    expect(old).not.toHaveProperty("machineVersion");
    expect(TASK_MACHINE_VERSION).toBe(2);
    expect(runStatusOf(restoreTaskActor(old, "t-1").getSnapshot())).toBe("running");
    expect(persistedContextOf(old, "t-1").taskId).toBe("t-1");
  });

  it("version 1 (the whole history in the context) keeps that history in the head, and the newest messages in the window", () => {
    const old: Record<string, unknown> = { ...versionOneSnapshot(RECENT_HISTORY + 5), machineVersion: 1 };
    const oldHistory = (old["context"] as { history: Message[] }).history;
    const context = persistedContextOf(old, "t-1");
    expect(context.request.messageId).toBe("m-0");
    expect(context.historyCount).toBe(RECENT_HISTORY + 5);
    expect(context.history).toEqual(oldHistory.slice(-RECENT_HISTORY));
    expect(context.unloggedHistory).toEqual(oldHistory);
    // The restored actor appends as any task does: counted, the window moves, the early history stays.
    const actor = restoreTaskActor(old, "t-1");
    applyTaskEvent(actor, { type: "NODE_STARTED", at, nodeId: "echo" });
    applyTaskEvent(actor, { type: "NODE_COMPLETED", at, nodeId: "echo", output: {}, artifacts: [], next: null });
    applyTaskEvent(actor, {
      type: "COMPLETE",
      at,
      statusMessage: { messageId: "done", role: "agent", parts: [{ kind: "text", text: "done" }] },
    });
    const after = actor.getSnapshot().context;
    expect(after.historyCount).toBe(RECENT_HISTORY + 6);
    expect(after.history.map((m) => m.messageId)).toEqual([
      ...oldHistory.slice(-RECENT_HISTORY + 1).map((m) => m.messageId),
      "done",
    ]);
    expect(after.unloggedHistory).toEqual(oldHistory);
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

describe("a failed task stored while failed was a final state", () => {
  it("restores as active and can be retried (XState's done status would refuse every event)", () => {
    const actor = runningActor();
    applyTaskEvent(actor, { type: "NODE_STARTED", at, nodeId: "echo" });
    applyTaskEvent(actor, { type: "FAIL", at, error: { code: "boom", message: "boom", nodeId: "echo" } });
    const stored = { ...persistTaskSnapshot(actor.getSnapshot()), status: "done" };
    expect(restorePersistedSnapshot(stored, "t-1")).toMatchObject({ value: "failed", status: "active" });
    const restored = restoreTaskActor(stored);
    applyTaskEvent(restored, { type: "RETRY", at, by: "op", nodeId: "echo" });
    expect(runStatusOf(restored.getSnapshot())).toBe("running");
    expect(restored.getSnapshot().context.error).toBeUndefined();
  });
});
