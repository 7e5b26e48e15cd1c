// Task execution leases on both stores: acquire (free, expired, or this owner's own → epoch + 1), renew,
// release, the fenced commit (refused with LeaseLostError once another owner took the lease), timer claims.
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskRecord } from "../../src/domain/task-record.js";
import { LeaseLostError, StaleWriteError, type TaskStore } from "../../src/store/task-store.js";
import "../support/mongo.js";
import { changes, events, record } from "../support/task-records.js";

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const at = (ms: number) => new Date(T0 + ms);
const iso = (ms: number) => at(ms).toISOString();
const running = (taskId: string, overrides: Partial<TaskRecord> = {}): TaskRecord =>
  record(taskId, { status: "running", ...overrides });

function contract(name: string, open: () => Promise<TaskStore>, close: () => Promise<void>) {
  describe(`task leases: ${name}`, () => {
    let store: TaskStore;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(close);

    it("a created lease reads back; only its owner's fenced commit passes, and it renews the lease", async () => {
      const id = randomUUID();
      await store.create(running(id, { lease: { owner: "a", epoch: 1, expiresAt: iso(10_000) } }), events(id, 0, 1));
      expect((await store.get(id))?.lease).toEqual({ owner: "a", epoch: 1, expiresAt: iso(10_000) });
      await expect(
        store.commit(id, 0, changes("running"), events(id, 1, 1), { owner: "b", epoch: 1, expiresAt: iso(20_000) }),
      ).rejects.toBeInstanceOf(LeaseLostError);
      await expect(
        store.commit(id, 0, changes("running"), events(id, 1, 1), { owner: "a", epoch: 2, expiresAt: iso(20_000) }),
      ).rejects.toBeInstanceOf(LeaseLostError);
      expect((await store.get(id))?.version).toBe(0);
      await store.commit(id, 0, changes("running"), events(id, 1, 1), { owner: "a", epoch: 1, expiresAt: iso(20_000) });
      expect(await store.get(id)).toMatchObject({
        version: 1,
        lease: { owner: "a", epoch: 1, expiresAt: iso(20_000) },
      });
      expect((await store.readEvents(id, 0)).map((e) => e.sequence)).toEqual([0, 1]);
    });

    it("acquire: a live lease of another owner blocks; an expired one is taken with the next epoch", async () => {
      const id = randomUUID();
      await store.create(running(id, { lease: { owner: "a", epoch: 1, expiresAt: iso(10_000) } }), events(id, 0, 1));
      expect(await store.acquireLease(id, "b", at(5_000), at(15_000))).toBeNull();
      expect(await store.leaseableTaskIds(at(5_000), "b", 100)).not.toContain(id);
      expect(await store.leaseableTaskIds(at(10_000), "b", 100)).toContain(id);
      // Taken from a holder that never gave it back: a node it had started died with it (poison work counts this).
      expect(await store.acquireLease(id, "b", at(10_000), at(20_000))).toEqual({
        owner: "b",
        epoch: 2,
        expiresAt: iso(20_000),
        unreleased: true,
      });
      expect((await store.get(id))?.lease).toEqual({ owner: "b", epoch: 2, expiresAt: iso(20_000) });
      // Only one of two racing acquirers wins.
      const raced = await Promise.all([
        store.acquireLease(id, "c", at(30_000), at(40_000)),
        store.acquireLease(id, "d", at(30_000), at(40_000)),
      ]);
      expect(raced.filter((l) => l !== null)).toHaveLength(1);
      expect(raced.find((l) => l !== null)?.epoch).toBe(3);
    });

    it("acquire says whether the lease was given back: released (SIGTERM) no, expired or this id's own from before a restart yes", async () => {
      const id = randomUUID();
      await store.create(running(id, { lease: { owner: "a", epoch: 1, expiresAt: iso(10_000) } }), events(id, 0, 1));
      await store.releaseLease(id, "a", 1);
      expect(await store.acquireLease(id, "b", at(1_000), at(11_000))).toMatchObject({
        owner: "b",
        epoch: 2,
        unreleased: false,
      });
      // The same owner id again (a restarted process): its own lease, never released, so its holder died.
      expect(await store.acquireLease(id, "b", at(2_000), at(12_000))).toMatchObject({
        owner: "b",
        epoch: 3,
        unreleased: true,
      });
      const fresh = randomUUID();
      await store.create(running(fresh), events(fresh, 0, 1));
      expect(await store.acquireLease(fresh, "c", at(0), at(10_000))).toMatchObject({
        owner: "c",
        epoch: 1,
        unreleased: false,
      });
    });

    it("fencing: the old owner's commit after a takeover is refused, the new owner's commits and the old one's log stays intact", async () => {
      const id = randomUUID();
      await store.create(running(id, { lease: { owner: "a", epoch: 1, expiresAt: iso(10_000) } }), events(id, 0, 1));
      const taken = await store.acquireLease(id, "b", at(11_000), at(21_000));
      expect(taken?.epoch).toBe(2);
      await store.commit(id, 0, changes("running"), events(id, 1, 2), { owner: "b", epoch: 2, expiresAt: iso(21_000) });
      // The frozen owner wakes up with the version it last saw: refused as a lost lease, not a version race.
      await expect(
        store.commit(id, 0, changes("completed"), events(id, 1, 1), { owner: "a", epoch: 1, expiresAt: null }),
      ).rejects.toBeInstanceOf(LeaseLostError);
      // Even at the current version.
      await expect(
        store.commit(id, 2, changes("completed"), events(id, 3, 1), { owner: "a", epoch: 1, expiresAt: null }),
      ).rejects.toBeInstanceOf(LeaseLostError);
      expect((await store.readEvents(id, 0)).map((e) => e.eventId)).toEqual([`${id}:0`, `${id}:1`, `${id}:2`]);
      expect((await store.get(id))?.status).toBe("running");
      // The new owner carries on.
      await store.commit(id, 2, changes("running"), events(id, 3, 1), { owner: "b", epoch: 2, expiresAt: iso(22_000) });
      expect((await store.get(id))?.version).toBe(3);
    });

    it("an unfenced (external) commit needs only the version; a fenced one behind it fails as a version race", async () => {
      const id = randomUUID();
      await store.create(running(id, { lease: { owner: "a", epoch: 1, expiresAt: iso(10_000) } }), events(id, 0, 1));
      await store.commit(id, 0, changes("cancelling"), events(id, 1, 1));
      expect((await store.get(id))?.lease?.owner).toBe("a");
      await expect(
        store.commit(id, 0, changes("running"), events(id, 1, 1), { owner: "a", epoch: 1, expiresAt: iso(10_000) }),
      ).rejects.toBeInstanceOf(StaleWriteError);
      await expect(
        store.commit(id, 0, changes("running"), events(id, 1, 1), { owner: "a", epoch: 1, expiresAt: iso(10_000) }),
      ).rejects.not.toBeInstanceOf(LeaseLostError);
    });

    it("a fenced commit that makes the task wait releases the lease; waiting tasks cannot be leased", async () => {
      const id = randomUUID();
      await store.create(running(id, { lease: { owner: "a", epoch: 1, expiresAt: iso(10_000) } }), events(id, 0, 1));
      await store.commit(id, 0, changes("waiting-approval"), events(id, 1, 1), {
        owner: "a",
        epoch: 1,
        expiresAt: null,
      });
      expect((await store.get(id))?.lease ?? null).toBeNull();
      expect(await store.acquireLease(id, "b", at(0), at(10_000))).toBeNull();
      expect(await store.leaseableTaskIds(at(0), "b", 100)).not.toContain(id);
      // A reply makes it runnable (an unfenced commit): the epoch goes on from where it was.
      await store.commit(id, 1, changes("running"), events(id, 2, 1));
      expect(await store.leaseableTaskIds(at(0), "b", 100)).toContain(id);
      expect(await store.acquireLease(id, "b", at(0), at(10_000))).toMatchObject({ owner: "b", epoch: 2 });
    });

    it("renew moves only this owner's leases; release frees only the holder's epoch; the same owner id re-acquires (a restart)", async () => {
      const mine = randomUUID();
      const theirs = randomUUID();
      await store.create(
        running(mine, { lease: { owner: "a", epoch: 1, expiresAt: iso(10_000) } }),
        events(mine, 0, 1),
      );
      await store.create(
        running(theirs, { lease: { owner: "b", epoch: 1, expiresAt: iso(10_000) } }),
        events(theirs, 0, 1),
      );
      expect(await store.renewLeases("a", [mine, theirs], at(30_000))).toBe(1);
      expect((await store.get(mine))?.lease?.expiresAt).toBe(iso(30_000));
      expect((await store.get(theirs))?.lease?.expiresAt).toBe(iso(10_000));
      await store.releaseLease(theirs, "a", 1);
      expect((await store.get(theirs))?.lease?.owner).toBe("b");
      await store.releaseLease(theirs, "b", 2);
      expect((await store.get(theirs))?.lease?.owner).toBe("b");
      await store.releaseLease(theirs, "b", 1);
      expect((await store.get(theirs))?.lease ?? null).toBeNull();
      expect(await store.acquireLease(theirs, "c", at(0), at(10_000))).toMatchObject({ owner: "c", epoch: 2 });
      // A restarted process with the same INSTANCE_ID takes its unexpired lease back with a new epoch.
      expect(await store.acquireLease(mine, "a", at(0), at(10_000))).toMatchObject({ owner: "a", epoch: 2 });
      await expect(
        store.commit(mine, 0, changes("running"), events(mine, 1, 1), { owner: "a", epoch: 1, expiresAt: iso(10_000) }),
      ).rejects.toBeInstanceOf(LeaseLostError);
    });

    it("a due timer is claimed by one caller only, and is due again at the retry time", async () => {
      const id = randomUUID();
      await store.create(running(id, { timerDueAt: iso(1_000) }), events(id, 0, 1));
      expect(await store.claimTimer(id, at(500), at(20_000))).toBe(false);
      expect(await store.leaseableTaskIds(at(500), "a", 100)).not.toContain(id);
      const claims = await Promise.all([
        store.claimTimer(id, at(1_000), at(11_000)),
        store.claimTimer(id, at(1_000), at(11_000)),
      ]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await store.dueTimers(at(5_000), 100)).not.toContain(id);
      expect(await store.dueTimers(at(11_000), 100)).toContain(id);
    });
  });
}

contract(
  "memory",
  async () => new MemoryTaskStore(() => at(0)),
  async () => {},
);

let client: MongoClient;
const dbName = `leases_${randomUUID().slice(0, 8)}`;
for (const oneCommandWrites of [true, false]) {
  contract(
    `mongodb (${oneCommandWrites ? "one command" : "two commands"} per write)`,
    async () => {
      client ??= await MongoClient.connect(inject("mongoUri"));
      const store = new MongoTaskStore(client, client.db(`${dbName}_${oneCommandWrites}`), {
        oneCommandWrites,
        now: () => at(0),
      });
      await store.init();
      return store;
    },
    async () => {
      await client.db(`${dbName}_${oneCommandWrites}`).dropDatabase();
    },
  );
}
afterAll(async () => client?.close());
