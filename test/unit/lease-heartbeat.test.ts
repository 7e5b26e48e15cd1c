// The lease heartbeat: renews what this instance holds, takes over free leases, and when the store stops
// answering reports the problem (readiness) and, once its leases may have expired, forgets them.
import { describe, expect, it } from "vitest";
import { LeaseKeeper } from "../../src/engine/lease-keeper.js";
import { TaskRepository } from "../../src/engine/task-repository.js";
import { TransitionHook } from "../../src/engine/transition-hook.js";
import { createLogger } from "../../src/observability/logger.js";
import { Readiness } from "../../src/observability/readiness.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { TaskRecord } from "../../src/domain/task-record.js";

class FlakyStore extends MemoryTaskStore {
  down = false;
  override async renewLeases(owner: string, taskIds: string[], expiresAt: Date): Promise<number> {
    if (this.down) throw new Error("connection refused\nstack");
    return super.renewLeases(owner, taskIds, expiresAt);
  }
  override async leaseableTaskIds(now: Date, owner: string, limit: number): Promise<string[]> {
    if (this.down) throw new Error("connection refused");
    return super.leaseableTaskIds(now, owner, limit);
  }
}

const running = (taskId: string, lease?: TaskRecord["lease"]): TaskRecord => ({
  taskId,
  tenant: "t",
  contextId: "c",
  workflowId: "echo",
  version: 0,
  status: "running",
  a2a: { taskId, runId: taskId, state: "working", updatedAt: "2030-01-01T00:00:00.000Z" },
  snapshot: {},
  createdAt: "2030-01-01T00:00:00.000Z",
  updatedAt: "2030-01-01T00:00:00.000Z",
  ...(lease ? { lease } : {}),
});

describe("lease heartbeat", () => {
  it("takes free and expired leases, renews them, and on a store outage reports not ready and then forgets its leases", async () => {
    let now = Date.parse("2030-01-01T00:00:00.000Z");
    const clock = () => new Date(now);
    const store = new FlakyStore(clock);
    const logger = createLogger("silent");
    const repository = new TaskRepository({
      store,
      hook: new TransitionHook(logger),
      retentionMs: 1000,
      clock,
      leases: { instanceId: "me", ttlMs: 1000, heartbeatMs: 300 },
    });
    const kicked: string[] = [];
    const cancelled: string[] = [];
    const keeper = new LeaseKeeper({
      repository,
      logger,
      clock,
      kick: (taskId) => void repository.acquireLease(taskId).then((ok) => ok && kicked.push(taskId)),
      cancelled: (taskId) => cancelled.push(taskId),
    });
    await store.create(running("free"), []);
    await store.create(
      running("expired", { owner: "other", epoch: 3, expiresAt: new Date(now - 1).toISOString() }),
      [],
    );
    await store.create(
      running("held", { owner: "other", epoch: 1, expiresAt: new Date(now + 5000).toISOString() }),
      [],
    );

    await keeper.beat();
    await new Promise((r) => setTimeout(r, 10));
    expect(kicked.sort()).toEqual(["expired", "free"]);
    expect((await store.get("expired"))?.lease).toMatchObject({ owner: "me", epoch: 4 });
    expect(keeper.problem).toBeUndefined();

    now += 500;
    await keeper.beat();
    expect((await store.get("free"))?.lease?.expiresAt).toBe(new Date(now + 1000).toISOString());
    expect(cancelled).toEqual([]);

    // A cancel committed through another instance (no fence, version check only) reaches the owner's heartbeat.
    await store.commit(
      "expired",
      0,
      { ...running("expired"), status: "cancelling", expireAt: null, timerDueAt: null },
      [],
    );
    await keeper.beat();
    expect(cancelled).toEqual(["expired"]);

    const readiness = new Readiness({ ping: async () => {}, timeoutMs: 50, leaseProblem: () => keeper.problem });
    store.down = true;
    now += 300;
    await keeper.beat();
    expect(keeper.problem).toBe("lease heartbeat: connection refused");
    expect(await readiness.check()).toEqual({
      ready: false,
      reason: "lease heartbeat: connection refused",
      checks: { store: "ok", draining: false, leases: "lost" },
    });
    expect(repository.holdsLease("free")).toBe(true);

    // Past the TTL since the last good beat: the leases may be someone else's now.
    now += 800;
    await keeper.beat();
    expect(repository.heldLeaseCount()).toBe(0);

    store.down = false;
    await keeper.beat();
    expect(keeper.problem).toBeUndefined();
    expect((await readiness.check()).ready).toBe(true);
  });

  it("keeps renewing its leases at its own pace while a takeover scan waits on a slow store", async () => {
    class SlowScanStore extends MemoryTaskStore {
      renewals = 0;
      release: () => void = () => {};
      private readonly gate = new Promise<void>((resolve) => (this.release = resolve));
      override async renewLeases(owner: string, taskIds: string[], expiresAt: Date): Promise<number> {
        this.renewals++;
        return super.renewLeases(owner, taskIds, expiresAt);
      }
      override async leaseableTaskIds(now: Date, owner: string, limit: number): Promise<string[]> {
        await this.gate;
        return super.leaseableTaskIds(now, owner, limit);
      }
    }
    const store = new SlowScanStore();
    const logger = createLogger("silent");
    const repository = new TaskRepository({
      store,
      hook: new TransitionHook(logger),
      retentionMs: 1000,
      leases: { instanceId: "me", ttlMs: 100, heartbeatMs: 10 },
    });
    await store.create(running("mine"), []);
    expect(await repository.acquireLease("mine")).toBe(true);
    const keeper = new LeaseKeeper({
      repository,
      logger,
      clock: () => new Date(),
      kick: () => {},
      cancelled: () => {},
    });
    keeper.start();
    try {
      // The first beat's scan never answers; the renewals must not wait for it (the lease would lapse).
      const deadline = Date.now() + 10_000;
      while (store.renewals < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(store.renewals).toBeGreaterThanOrEqual(4);
      expect((await store.get("mine"))?.lease?.owner).toBe("me");
    } finally {
      keeper.stop();
      store.release();
    }
  });
});
