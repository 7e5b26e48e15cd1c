// The push worker's lease bookkeeping on the in-memory store with a hand-moved clock: an instance frozen
// past its lease finds out before its next POST; the heartbeat renews what is still held, forgets what was
// taken, and hands over leases a dead instance left; shutdown gives every lease back.
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/observability/logger.js";
import { DeliveryLeases } from "../../src/push/push-delivery-leases.js";
import { MemoryPushConfigStore } from "../../src/store/memory-push-config-store.js";
import { initialDelivery, type PushConfigKey, type PushConfigRecord } from "../../src/store/push-config-store.js";

const T0 = Date.parse("2030-01-01T00:00:00.000Z");
const settings = (instanceId: string) => ({ instanceId, ttlMs: 1_000, heartbeatMs: 300 });

function setup() {
  let now = T0;
  const clock = () => new Date(now);
  const store = new MemoryPushConfigStore(clock);
  const lines: string[] = [];
  const logger = createLogger(
    "debug",
    new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) }),
  );
  const expired: PushConfigKey[][] = [];
  const leases = (id: string) =>
    new DeliveryLeases({
      configs: store,
      settings: settings(id),
      logger,
      clock,
      expired: (keys) => expired.push(keys),
    });
  const config = (taskId: string) =>
    store.upsert(
      {
        tenant: "t",
        taskId,
        configId: "c",
        url: "https://hooks.example.com/",
        schemes: null,
        sealed: null,
        tokenFingerprint: null,
        updatedAt: clock().toISOString(),
      },
      initialDelivery(-1, null),
      10,
    );
  return { store, lines, expired, leases, config, advance: (ms: number) => (now += ms) };
}

describe("push delivery leases", () => {
  it("a holder frozen past its lease finds out before its next POST; the one that took over is told apart in the log", async () => {
    const { store, lines, leases, config, advance } = setup();
    const a = leases("host-a");
    const b = leases("host-b");
    const claimed = (await a.claim(await config("t1"))) as PushConfigRecord;
    expect(claimed.lease).toMatchObject({ owner: "host-a", epoch: 1 });
    expect(a.holds(claimed)).toBe(true);
    // Within half the TTL no store command is needed to trust the lease.
    expect(await a.confirm("t1", "c")).toBe(true);
    // Frozen for longer than the TTL: B takes it over.
    advance(1_500);
    const stale = (await store.get("t1", "c"))!;
    expect(b.heldElsewhere(stale, T0 + 1_500)).toBe(false);
    expect((await b.claim(stale))?.lease).toMatchObject({ owner: "host-b", epoch: 2 });
    expect(
      lines.some(
        (l) =>
          l.includes("took over the delivery lease") &&
          l.includes('"previousOwner":"host-a"') &&
          l.includes('"instanceId":"host-b"'),
      ),
    ).toBe(true);
    expect(a.heldElsewhere((await store.get("t1", "c"))!, T0 + 1_500)).toBe(true);
    // A wakes up: it must not POST, and has no fence left for a cursor move.
    expect(await a.confirm("t1", "c")).toBe(false);
    expect(a.fence("t1", "c")).toBeUndefined();
    expect(lines.some((l) => l.includes("delivery lease lost") && l.includes('"instanceId":"host-a"'))).toBe(true);
  });

  it("a holder that was frozen but not taken over renews its lease before the POST and carries on", async () => {
    const { store, leases, config, advance } = setup();
    const a = leases("host-a");
    await a.claim(await config("t1"));
    advance(1_200);
    expect(await a.confirm("t1", "c")).toBe(true);
    expect((await store.get("t1", "c"))?.lease).toEqual({
      owner: "host-a",
      epoch: 1,
      expiresAt: new Date(T0 + 2_200).toISOString(),
    });
  });

  it("the heartbeat renews what is still held, forgets what was taken, and hands over expired leases; stop gives the rest back", async () => {
    const { store, expired, leases, config, advance } = setup();
    const a = leases("host-a");
    const b = leases("host-b");
    const dead = leases("host-dead");
    await a.claim(await config("t1"));
    await a.claim(await config("t2"));
    await dead.claim(await config("t3"));
    advance(1_000);
    // t2's lease expired and B took it; t1 is renewed; t3 (its holder is gone) is handed to the worker.
    await b.claim((await store.get("t2", "c"))!);
    await a.beat();
    expect(a.isHeld("t1", "c")).toBe(true);
    expect(a.isHeld("t2", "c")).toBe(false);
    expect((await store.get("t1", "c"))?.lease?.expiresAt).toBe(new Date(T0 + 2_000).toISOString());
    expect(expired.flat()).toEqual([{ taskId: "t3", configId: "c" }]);
    await a.stop();
    expect((await store.get("t1", "c"))?.lease).toEqual({ owner: null, epoch: 1, expiresAt: null });
    expect((await store.get("t2", "c"))?.lease?.owner).toBe("host-b");
  });
});
