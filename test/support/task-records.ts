import type { TaskRecord } from "../../src/store/task-store.js";

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
