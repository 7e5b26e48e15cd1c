// When a long-poll (A2A 1.1 draft GetTask `currentGeneration`) is answered at once rather than held.
import { describe, expect, it } from "vitest";
import { generationPassed } from "../../src/a2a/generation-waits.js";
import type { TaskRecord } from "../../src/domain/task-record.js";

function record(generation: number | undefined, state: TaskRecord["a2a"]["state"] = "working"): TaskRecord {
  return {
    taskId: "t1",
    tenant: "default",
    contextId: "c1",
    workflowId: "echo",
    version: 3,
    ...(generation !== undefined ? { generation } : {}),
    status: "running",
    a2a: { state },
    snapshot: {},
    createdAt: "2026-11-28T00:00:00.000Z",
    updatedAt: "2026-11-28T00:00:00.000Z",
  } as TaskRecord;
}

describe("generationPassed", () => {
  it("holds the caller while the task is at or below the given generation and still running", () => {
    expect(generationPassed(record(4), 4)).toBe(false);
    expect(generationPassed(record(3), 4)).toBe(false);
  });

  it("answers at once past the generation, on a terminal task, and on a task written before generations were kept", () => {
    expect(generationPassed(record(5), 4)).toBe(true);
    expect(generationPassed(record(4, "completed"), 4)).toBe(true);
    expect(generationPassed(record(undefined), 4)).toBe(true);
  });
});
