// A shutdown while a blocking send's new task runs its pure handler before its first write
// (BLOCKING_FIRST_WRITE_MS): the handler is cut short, the task is written as it stands (node.started), and its
// lease goes back as a driver loop's would, so the instance that takes it over runs the node again without
// counting a crash (poison work counts only executions that died with their instance).
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { startTestCore } from "../support/start-core.js";

const WORKFLOW = `
id: wait-for-stop
name: Wait for stop
description: A pure handler that runs until its signal is aborted.
nodes:
  - { kind: task, id: think, handler: think-until-stopped }
`;

describe("a shutdown during a blocking send's first-write window", () => {
  it("writes the task as it stands, gives its lease back, and the next instance counts no crash", async () => {
    const dir = await mkdtemp(join(tmpdir(), "first-write-"));
    await writeFile(join(dir, "wait-for-stop.yaml"), WORKFLOW);
    const store = new MemoryTaskStore();
    let started!: (taskId: string) => void;
    const running = new Promise<string>((resolve) => (started = resolve));
    const thinkUntilStopped: TaskHandler = Object.assign(
      async (ctx: Parameters<TaskHandler>[0]) => {
        started(ctx.taskId);
        await new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }),
        );
        return { output: {} };
      },
      { pure: true },
    );
    const env = { WORKFLOWS_DIR: dir, BLOCKING_FIRST_WRITE_MS: "10000", LEASE_TTL_MS: "60000", INSTANCE_ID: "first" };
    const first = await startTestCore(env, { store, handlers: { "think-until-stopped": thinkUntilStopped } });
    const caller = new AbortController();
    const ctx: CallContext = { principal: { tenant: "default", id: "alice", scopes: "*" }, signal: caller.signal };
    const sending = first.core.service
      .sendMessage(
        {
          message: {
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text: "go" }],
            metadata: { skillId: "wait-for-stop" },
          },
          blocking: true,
        },
        ctx,
      )
      .catch((err: unknown) => err);
    const taskId = await running;
    expect(await store.get(taskId), "nothing written while the window runs").toBeNull();

    await first.close();
    // The transport aborts its requests as the process stops; the caller is answered with the task as it is.
    caller.abort();
    await sending;
    const stored = await store.get(taskId);
    expect(stored?.status).toBe("running");
    expect(stored?.lease, "the lease went back with the shutdown").toBeUndefined();
    expect((await store.readEvents(taskId, 0)).map((e) => e.type)).toEqual([
      "run.created",
      "run.started",
      "node.started",
    ]);

    // Another instance resumes it at once (the lease is free) and runs the node again: not a crash.
    let secondRuns = 0;
    const done: TaskHandler = Object.assign(async () => ((secondRuns += 1), { output: { done: true } }), {
      pure: true,
    });
    const second = await startTestCore(
      { ...env, INSTANCE_ID: "second" },
      { store, handlers: { "think-until-stopped": done } },
    );
    try {
      const final = await second.core.observer.waitUntil({
        taskId,
        tenant: "default",
        start: stored!,
        until: (r) => r.status === "completed",
        timeoutMs: 5000,
      });
      expect(final.status).toBe("completed");
      expect(secondRuns).toBe(1);
      const types = (await store.readEvents(taskId, 0)).map((e) => e.type);
      expect(types).not.toContain("node.interrupted");
      expect(types.filter((t) => t === "node.started")).toHaveLength(2);
    } finally {
      await second.close();
    }
  });
});
