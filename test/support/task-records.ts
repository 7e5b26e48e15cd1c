import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";

/** A new task's head as the store tests write it (pending, version 0), with `overrides`. */
export function record(taskId: string, overrides: Partial<TaskRecord> = {}): TaskRecord {
  const at = new Date().toISOString();
  return {
    taskId,
    tenant: "t1",
    contextId: "ctx",
    workflowId: "echo",
    version: 0,
    status: "pending",
    a2a: { taskId, runId: taskId, state: "submitted", updatedAt: at },
    snapshot: { value: "pending", context: { note: "café ☕" } },
    createdAt: at,
    updatedAt: at,
    expireAt: null,
    timerDueAt: null,
    ...overrides,
  };
}

/** `count` log events from sequence `from` (the first of a task is run.created). */
export function events(taskId: string, from: number, count: number): RunEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    eventId: `${taskId}:${from + i}`,
    runId: taskId,
    type: i === 0 && from === 0 ? "run.created" : "node.started",
    payload: { n: from + i },
    timestamp: new Date().toISOString(),
    sequence: from + i,
  }));
}

/** What a commit rewrites, with this status. */
export const changes = (status: TaskRecord["status"], extra: Partial<TaskRecord> = {}) => ({
  status,
  a2a: { taskId: "x", runId: "x", state: "working" as const, updatedAt: new Date().toISOString() },
  snapshot: { value: status },
  updatedAt: new Date().toISOString(),
  expireAt: null,
  timerDueAt: null,
  ...extra,
});
