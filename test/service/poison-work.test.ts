// Poison work (docs/operating.md "Poison work"): each takeover of a lease its holder never gave back, finding
// the node started and unfinished, commits `node.interrupted` before the node runs again. The first such death
// is not charged (other work may have killed the instance): the node becomes a suspect and runs again alone on
// its instance. A death while it ran alone is its own and is counted durably, and after RECOVERY_MAX_ATTEMPTS of
// them the run fails with `poison_exhausted` and is never picked up again. Work that died beside a poison node
// is not charged and completes. A graceful stop (the lease released) does not count. Here an instance "dies" by losing its store (every call throws, as in a dead process: it
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

/**
 * A store that dies with its process: from `kill()` on, every call fails (no release, no commit). `diesAfter`, if
 * given, is asked after each call that answered: true kills the process right there (between two store calls).
 */
function killable(
  inner: TaskStore,
  diesAfter?: (method: string, args: unknown[], result: unknown) => boolean,
): { store: TaskStore; kill(): void } {
  let dead = false;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function" || prop === "openCommitFeed") return value;
      return async (...args: unknown[]) => {
        if (dead) throw new Error("the process is dead");
        const result = await (value as (...a: unknown[]) => unknown).apply(target, args);
        if (diesAfter?.(String(prop), args, result)) dead = true;
        return result;
      };
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
    /** Innocent work beside the poison: blocks until its instance stops on its first execution, completes after. */
    const slow: TaskHandler = (hctx) => {
      calls.push({ taskId: hctx.taskId, idempotencyKey: hctx.idempotencyKey, attempt: hctx.attempt });
      if (hctx.attempt === 1)
        return new Promise((resolve) =>
          hctx.signal.addEventListener("abort", () => resolve({ output: {} }), { once: true }),
        );
      return new Promise((resolve) => setTimeout(() => resolve({ output: { ok: true } }), 20));
    };
    /** Quick work around a delay (the chaos test's `chaos-delay`): records its run and ends. */
    const quick: TaskHandler = (hctx) => {
      calls.push({ taskId: hctx.taskId, idempotencyKey: hctx.idempotencyKey, attempt: hctx.attempt });
      return Promise.resolve({ output: { node: hctx.nodeId } });
    };
    const handlers = { poison, flaky, slow, quick };
    const env = (instance: string, more: Record<string, string> = {}) => ({
      WORKFLOWS_DIR: dir,
      INSTANCE_ID: instance,
      RECOVERY_MAX_ATTEMPTS: "3",
      PUSH_ENABLED: "false",
      BLOCKING_TIMEOUT_MS: "10000",
      ...more,
    });

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "poison-work-"));
      await writeFile(
        join(dir, "flaky.yaml"),
        "id: flaky\nname: Flaky\ndescription: retried handler errors\nnodes:\n  - { kind: task, id: work, handler: flaky, retry: { maxAttempts: 2 } }\n",
      );
      await writeFile(
        join(dir, "slow.yaml"),
        "id: slow\nname: Slow\ndescription: innocent work\nnodes:\n  - { kind: task, id: work, handler: slow }\n",
      );
      await writeFile(
        join(dir, "pause.yaml"),
        "id: pause\nname: Pause\ndescription: work, a durable timer, work\nnodes:\n  - { kind: task, id: before, handler: quick }\n  - { kind: delay, id: wait, durationMs: 100 }\n  - { kind: task, id: after, handler: quick }\n",
      );
      await writeFile(
        join(dir, "poison.yaml"),
        "id: poison\nname: Poison\ndescription: a node that kills its instance\nnodes:\n  - { kind: task, id: crash, handler: poison }\n",
      );
    });

    /** One life of an instance: start it, wait for `calls` to reach `expected`, then let it die (or stop it gracefully). */
    async function life(
      base: TaskStore,
      instance: string,
      options: { env?: Record<string, string>; diesAfter?: Parameters<typeof killable>[1] } = {},
    ): Promise<{ core: TestCore; kill(): Promise<void> }> {
      const { store, kill } = killable(base, options.diesAfter);
      const core = await startTestCore(env(instance, options.env), { store, handlers });
      return {
        core,
        kill: async () => {
          kill();
          await core.close();
        },
      };
    }

    it("charges only deaths while the node ran alone, and fails the run with poison_exhausted at RECOVERY_MAX_ATTEMPTS of them; other tasks keep working", async () => {
      const base = await openStore();
      calls.length = 0;
      let host = await life(base, "host-1");
      const task = await host.core.core.service.sendMessage({ message: message("poison"), blocking: false }, ctx);
      const taskId = task.id;
      const interruptions = async () =>
        (await base.readEvents(taskId, 0)).filter((e) => e.type === "node.interrupted").map((e) => e.payload);
      // Execution 1 dies uncharged (a suspect now); executions 2 to 4 run alone, and each death is charged.
      for (let run = 1; run <= 4; run++) {
        await until(() => calls.length >= run || undefined, `execution ${run}`);
        // The count is stored before the node runs: a death now leaves it raised.
        expect((await interruptions()).map((p) => [p["charged"], p["crashes"]])).toEqual(
          [
            [false, 0],
            [true, 1],
            [true, 2],
          ].slice(0, run - 1),
        );
        const started = (await base.readEvents(taskId, 0)).filter((e) => e.type === "node.started").at(-1);
        expect(started?.payload["isolated"]).toBe(run > 1 ? true : undefined);
        await host.kill();
        host = await life(base, "host-1");
      }
      // The fifth start finds the third charged death: the run fails, the node is not run again.
      const failed = await until(
        async () => ((await base.get(taskId))?.a2a.state === "failed" ? base.get(taskId) : undefined),
        "the failed run",
      );
      expect(calls).toHaveLength(4); // RECOVERY_MAX_ATTEMPTS + 1: at most one uncharged death
      expect(new Set(calls.map((c) => c.idempotencyKey))).toEqual(new Set([`${taskId}:crash:1`]));
      expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3, 4]);
      expect(failed?.lease ?? undefined).toBeUndefined();
      expect(await interruptions()).toEqual([
        { nodeId: "crash", attempt: 1, crashes: 0, charged: false, cause: "instance-died" },
        ...[1, 2, 3].map((crashes) => ({
          nodeId: "crash",
          attempt: crashes + 1,
          crashes,
          charged: true,
          cause: "instance-died",
        })),
      ]);
      const log = await base.readEvents(taskId, 0);
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
      expect(calls).toHaveLength(4);
    });

    it("does not charge innocent work that died beside a poison node: both run again alone, the innocent completes, the poison alone is failed", async () => {
      const base = await openStore();
      calls.length = 0;
      let host = await life(base, "host-5");
      const poisonTask = await host.core.core.service.sendMessage({ message: message("poison"), blocking: false }, ctx);
      const innocent = await host.core.core.service.sendMessage({ message: message("slow"), blocking: false }, ctx);
      const ran = (taskId: string) => calls.filter((c) => c.taskId === taskId).length;
      await until(() => (ran(poisonTask.id) >= 1 && ran(innocent.id) >= 1) || undefined, "both first executions");
      await host.kill();
      host = await life(base, "host-5");
      // Every later life ends while the poison node runs (alone: nothing else runs then), until the run fails.
      const poisonFailed = async () => (await base.get(poisonTask.id))?.a2a.state === "failed";
      for (let seen = 1; ; seen++) {
        const next = await until(
          async () => ((await poisonFailed()) ? "failed" : ran(poisonTask.id) > seen ? "running" : undefined),
          `poison execution ${seen + 1} or its failure`,
        );
        if (next === "failed") break;
        await host.kill();
        host = await life(base, "host-5");
      }
      expect(ran(poisonTask.id)).toBe(4); // one uncharged death, then RECOVERY_MAX_ATTEMPTS (3) alone
      await until(
        async () => ((await base.get(innocent.id))?.a2a.state === "completed" ? true : undefined),
        "the innocent task's completion",
      );
      expect(ran(innocent.id)).toBe(2); // died once beside the poison, then ran alone and completed
      const innocentHead = await base.get(innocent.id);
      expect(innocentHead?.a2a.state).toBe("completed");
      const innocentLog = await base.readEvents(innocent.id, 0);
      expect(innocentLog.filter((e) => e.type === "node.interrupted").map((e) => e.payload["charged"])).toEqual([
        false,
      ]);
      const poisonLog = await base.readEvents(poisonTask.id, 0);
      expect(poisonLog.filter((e) => e.type === "node.interrupted").map((e) => e.payload["charged"])).toEqual([
        false,
        true,
        true,
        true,
      ]);
      expect(poisonLog.at(-1)?.payload["error"]).toMatchObject({ code: "poison_exhausted" });
      await host.kill();
    });

    it("does not interrupt a delay whose instance died firing its timer: nothing of it ran, so it is no suspect and fires, and the next node runs", async () => {
      const base = await openStore();
      calls.length = 0;
      // Short leases and timer polls, so the claimed timer and the dead holder's lease come free within a second.
      const fast = { LEASE_TTL_MS: "1000", LEASE_HEARTBEAT_MS: "200", TIMER_POLL_MS: "50" };
      // The instance dies right after it takes the lease to fire the due timer, before it writes the delay's end
      // (the only lease this task acquires in this life: the creating write holds its own, the delay's write gives it back).
      let taskId = "";
      let host = await life(base, "host-6", {
        env: fast,
        diesAfter: (method, args, result) => method === "acquireLease" && args[0] === taskId && result !== null,
      });
      const task = await host.core.core.service.sendMessage({ message: message("pause"), blocking: false }, ctx);
      taskId = task.id;
      const dead = await until(async () => {
        const head = await base.get(taskId);
        return head?.lease && head.lease.epoch > 1 ? head : undefined;
      }, "the instance that fires the timer to take the lease");
      await host.kill();
      // What the dead instance left: the delay started with its timer set, and a lease it never gave back.
      expect(dead.lease?.owner).toBe("host-6");
      expect(dead.snapshot).toMatchObject({
        context: { cursor: "wait", nodeStarted: true, timer: { nodeId: "wait" } },
      });
      host = await life(base, "host-6", { env: fast });
      await until(
        async () => ((await base.get(taskId))?.a2a.state === "completed" ? true : undefined),
        "the run to complete after the restart",
      );
      const log = await base.readEvents(taskId, 0);
      expect(log.filter((e) => e.type === "node.interrupted")).toEqual([]);
      expect(log.filter((e) => e.type === "node.started").map((e) => [e.nodeId, e.payload["isolated"]])).toEqual([
        ["before", undefined],
        ["wait", undefined],
        ["after", undefined],
      ]);
      expect(calls.filter((c) => c.taskId === taskId).map((c) => c.idempotencyKey)).toEqual([
        `${taskId}:before:1`,
        `${taskId}:after:1`,
      ]);
      await host.kill();
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
