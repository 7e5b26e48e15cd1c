// Poison work (docs/operating.md "Poison work"): a node whose execution kills its instance is counted
// durably — each takeover of a lease its holder never gave back, finding the node started and unfinished,
// commits `node.interrupted` with the node's next start, before it runs — and after RECOVERY_MAX_ATTEMPTS
// the run fails with `poison_exhausted` and is never picked up again. A graceful stop (the lease released)
// does not count. Here an instance "dies" by losing its store (every call throws, as in a dead process: it
// cannot release its leases), and the next instance starts with the same INSTANCE_ID, as a restart does.
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import type { Message } from "../../src/domain/a2a-types.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import { HandlerError, type HandlerContext, type TaskHandler } from "../../src/workflows/workflow-types.js";
import "../support/mongo.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

const ctx: CallContext = { principal: { tenant: "default", id: "tester", scopes: "*" } };
const message = (skillId: string): Message => ({
  messageId: randomUUID(),
  role: "user",
  parts: [{ kind: "text", text: "go" }],
  metadata: { skillId },
});

/** A store that dies with its process: from `kill()` on, every call fails (no release, no commit). */
function killable(inner: TaskStore): { store: TaskStore; kill(): void } {
  let dead = false;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function" || prop === "openCommitFeed") return value;
      return (...args: unknown[]) =>
        dead
          ? Promise.reject(new Error("the process is dead"))
          : (value as (...a: unknown[]) => unknown).apply(target, args);
    },
  });
  return { store, kill: () => (dead = true) };
}

async function until<T>(read: () => Promise<T | undefined> | T | undefined, what: string, ms = 5_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function suite(name: string, openStore: () => Promise<TaskStore>) {
  describe(`poison work: ${name}`, () => {
    let dir: string;
    const calls: Array<Pick<HandlerContext, "taskId" | "idempotencyKey" | "attempt">> = [];
    /** Runs until its instance stops: it "kills" the instance it runs on (the test kills the store meanwhile). */
    const poison: TaskHandler = (hctx) => {
      calls.push({ taskId: hctx.taskId, idempotencyKey: hctx.idempotencyKey, attempt: hctx.attempt });
      return new Promise((resolve) =>
        hctx.signal.addEventListener("abort", () => resolve({ output: {} }), { once: true }),
      );
    };
    /** Dies with its instance on its first execution, fails retryably on its second, succeeds on its third. */
    const flaky: TaskHandler = (hctx) => {
      calls.push({ taskId: hctx.taskId, idempotencyKey: hctx.idempotencyKey, attempt: hctx.attempt });
      if (hctx.attempt === 1)
        return new Promise((resolve) =>
          hctx.signal.addEventListener("abort", () => resolve({ output: {} }), { once: true }),
        );
      if (hctx.attempt === 2) return Promise.reject(new HandlerError("busy", "try again", true));
      return Promise.resolve({ output: { ok: true } });
    };
    const handlers = { poison, flaky };
    const env = (instance: string) => ({
      WORKFLOWS_DIR: dir,
      INSTANCE_ID: instance,
      RECOVERY_MAX_ATTEMPTS: "3",
      PUSH_ENABLED: "false",
      BLOCKING_TIMEOUT_MS: "10000",
    });

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "poison-work-"));
      await writeFile(
        join(dir, "flaky.yaml"),
        "id: flaky\nname: Flaky\ndescription: retried handler errors\nnodes:\n  - { kind: task, id: work, handler: flaky, retry: { maxAttempts: 2 } }\n",
      );
      await writeFile(
        join(dir, "poison.yaml"),
        "id: poison\nname: Poison\ndescription: a node that kills its instance\nnodes:\n  - { kind: task, id: crash, handler: poison }\n",
      );
    });

    /** One life of an instance: start it, wait for `calls` to reach `expected`, then let it die (or stop it gracefully). */
    async function life(base: TaskStore, instance: string): Promise<{ core: TestCore; kill(): Promise<void> }> {
      const { store, kill } = killable(base);
      const core = await startTestCore(env(instance), { store, handlers });
      return {
        core,
        kill: async () => {
          kill();
          await core.close();
        },
      };
    }

    it("counts every execution that died with its instance, and fails the run with poison_exhausted at RECOVERY_MAX_ATTEMPTS; other tasks keep working", async () => {
      const base = await openStore();
      calls.length = 0;
      let host = await life(base, "host-1");
      const task = await host.core.core.service.sendMessage({ message: message("poison"), blocking: false }, ctx);
      const taskId = task.id;
      // Three executions, each ended by the death of its instance; each restart (same INSTANCE_ID) takes the lease back at once.
      for (let run = 1; run <= 3; run++) {
        await until(() => calls.length >= run || undefined, `execution ${run}`);
        const events = await base.readEvents(taskId, 0);
        // The count is stored before the node runs: a death now leaves it raised.
        expect(events.filter((e) => e.type === "node.interrupted").map((e) => e.payload["crashes"])).toEqual(
          Array.from({ length: run - 1 }, (_, i) => i + 1),
        );
        await host.kill();
        host = await life(base, "host-1");
      }
      // The fourth start finds the third death: the run fails, the node is not run again.
      const failed = await until(
        async () => ((await base.get(taskId))?.a2a.state === "failed" ? base.get(taskId) : undefined),
        "the failed run",
      );
      expect(calls).toHaveLength(3);
      expect(new Set(calls.map((c) => c.idempotencyKey))).toEqual(new Set([`${taskId}:crash:1`]));
      expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
      expect(failed?.lease ?? undefined).toBeUndefined();
      const log = await base.readEvents(taskId, 0);
      expect(log.filter((e) => e.type === "node.interrupted").map((e) => e.payload)).toEqual(
        [1, 2, 3].map((crashes) => ({ nodeId: "crash", attempt: crashes, crashes, cause: "instance-died" })),
      );
      expect(log.slice(-3).map((e) => e.type)).toEqual(["node.interrupted", "node.failed", "run.failed"]);
      const error = log.at(-1)?.payload["error"] as { code: string; message: string; nodeId: string };
      expect(error).toMatchObject({ code: "poison_exhausted", nodeId: "crash" });
      expect(error.message).toContain('node "crash"');
      expect(error.message).toContain("3 times");
      // tasks/get and the runs API show it.
      const got = await host.core.core.service.getTask(taskId, undefined, ctx);
      expect(got.status.state).toBe("failed");
      expect(JSON.stringify(got.status)).toContain("poison_exhausted");
      // Terminal: no instance takes it again, and the host keeps serving other tasks.
      expect(await base.leaseableTaskIds(new Date(Date.now() + 3_600_000), "anyone", 1_000)).not.toContain(taskId);
      const echo = await host.core.core.service.sendMessage({ message: message("echo"), blocking: true }, ctx);
      expect(echo.status.state).toBe("completed");
      await host.kill();
      await new Promise((r) => setTimeout(r, 100));
      expect(calls).toHaveLength(3);
    });

    it("keeps handler retries (retry.maxAttempts) apart from executions that died: a crash does not use up the node's retry", async () => {
      const base = await openStore();
      calls.length = 0;
      let host = await life(base, "host-4");
      const task = await host.core.core.service.sendMessage({ message: message("flaky"), blocking: false }, ctx);
      await until(() => calls.length >= 1 || undefined, "the first execution");
      await host.kill();
      host = await life(base, "host-4");
      // Execution 2 fails retryably: its one retry is still there (execution 1 died, it failed nothing), so 3 runs and completes.
      await until(
        async () => ((await base.get(task.id))?.a2a.state === "completed" ? true : undefined),
        "the completed run",
      );
      expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
      const log = await base.readEvents(task.id, 0);
      expect(log.filter((e) => e.type === "node.interrupted")).toHaveLength(1);
      await host.kill();
    });

    it("does not count a graceful stop (the lease was released): the node runs again with the same idempotency key", async () => {
      const base = await openStore();
      calls.length = 0;
      let host = await life(base, "host-2");
      const task = await host.core.core.service.sendMessage({ message: message("poison"), blocking: false }, ctx);
      await until(() => calls.length >= 1 || undefined, "the first execution");
      await host.core.close(); // SIGTERM: the driver gives its lease back
      host = await life(base, "host-3"); // another instance: a released lease is free at once
      await until(() => calls.length >= 2 || undefined, "the second execution");
      const log = await base.readEvents(task.id, 0);
      expect(log.map((e) => e.type)).not.toContain("node.interrupted");
      expect(calls.map((c) => [c.idempotencyKey, c.attempt])).toEqual([
        [`${task.id}:crash:1`, 1],
        [`${task.id}:crash:1`, 2],
      ]);
      await host.kill();
    });
  });
}

suite("memory store", async () => new MemoryTaskStore());

describe(`poison work on MongoDB (${inject("mongoBackend")})`, () => {
  let client: MongoClient;
  const dbName = `poison_${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"));
  });
  afterAll(async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
  });
  suite("mongodb", async () => {
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    return store;
  });
});
