// Fair work on an instance (docs/operating.md "Fair work"): the deficit round robin queue by tenant, the
// scheduler that admits node work through it (a concurrency cap, turns by tenant, the queue delay it reports),
// runs suspects alone, and refuses waiting work on stop; and the WORK_* settings.
import { describe, expect, it } from "vitest";
import { EnvReader } from "../../src/domain/env-settings.js";
import { FairQueue } from "../../src/domain/fair-queue.js";
import { ShutdownSignal } from "../../src/engine/in-flight-work.js";
import { WorkScheduler } from "../../src/engine/work-scheduler.js";
import { readWorkSettings } from "../../src/engine/work-settings.js";
import { DeliverySlots } from "../../src/push/delivery-slots.js";

const drain = <T>(queue: FairQueue<T>): Array<{ key: string; item: T }> => {
  const out: Array<{ key: string; item: T }> = [];
  for (let next = queue.shift(); next; next = queue.shift()) out.push(next);
  return out;
};

/** A piece of work the test ends when it wants. */
function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
const tick = () => new Promise((r) => setImmediate(r));

describe("FairQueue (deficit round robin by tenant)", () => {
  it("serves one tenant's backlog and another's single item in turns: the newcomer waits one turn, not the backlog", () => {
    const queue = new FairQueue<string>();
    for (let i = 0; i < 1_000; i++) queue.push("a", `a${i}`);
    queue.push("b", "b0");
    const order = drain(queue).map((x) => x.item);
    expect(order.indexOf("b0")).toBe(1); // a0, then b's turn
    expect(order.filter((x) => x.startsWith("a"))).toEqual(Array.from({ length: 1_000 }, (_, i) => `a${i}`));
    expect(queue.size).toBe(0);
  });

  it("keeps each tenant's order and alternates between waiting tenants", () => {
    const queue = new FairQueue<number>();
    for (const [key, n] of [
      ["a", 3],
      ["b", 3],
      ["c", 1],
    ] as const)
      for (let i = 0; i < n; i++) queue.push(key, i);
    expect(drain(queue).map((x) => `${x.key}${x.item}`)).toEqual(["a0", "b0", "c0", "a1", "b1", "a2", "b2"]);
  });

  it("serves by weight: weight 3 takes three items a turn, and a weight below 1 builds up over rounds", () => {
    const weights: Record<string, number> = { heavy: 3, light: 0.5 };
    const queue = new FairQueue<number>((key) => weights[key] ?? 1);
    for (const key of ["heavy", "plain", "light"]) for (let i = 0; i < 30; i++) queue.push(key, i);
    const first = drain(queue)
      .slice(0, 18)
      .map((x) => x.key[0])
      .join("");
    // A round: 3 heavy, 1 plain, and light every other round (0.5 a round).
    expect(first).toBe("hhhp" + "hhhpl" + "hhhp" + "hhhpl");
  });

  it("gives a tenant that went idle no saved-up credit, and answers undefined when empty; drain empties it", () => {
    const queue = new FairQueue<number>((key) => (key === "a" ? 2 : 1));
    queue.push("a", 1);
    expect(queue.shift()).toEqual({ key: "a", item: 1 });
    expect(queue.shift()).toBeUndefined();
    queue.push("b", 1);
    queue.push("a", 2);
    queue.push("a", 3);
    queue.push("a", 4);
    expect(drain(queue).map((x) => `${x.key}${x.item}`)).toEqual(["b1", "a2", "a3", "a4"]);
    queue.push("a", 5);
    expect(queue.drain()).toEqual([5]);
    expect(queue.size).toBe(0);
  });
});

describe("WorkScheduler", () => {
  it("runs at most `concurrency` pieces at once and admits waiting ones in fair turns, reporting each wait", async () => {
    let now = 0;
    const admitted: Array<[string, number]> = [];
    const scheduler = new WorkScheduler({
      concurrency: 2,
      clock: () => now,
      admitted: (tenant, ms) => admitted.push([tenant, ms]),
    });
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const submit = (tenant: string, name: string) => {
      const g = gate();
      gates.set(name, g);
      return scheduler.run(tenant, async () => {
        started.push(name);
        await g.promise;
        return name;
      });
    };
    const runs = [...Array.from({ length: 6 }, (_, i) => submit("a", `a${i}`)), submit("b", "b0"), submit("b", "b1")];
    await tick();
    expect(started).toEqual(["a0", "a1"]);
    expect(scheduler.load).toEqual({ running: 2, waiting: 6, isolated: false });
    now = 50;
    gates.get("a0")!.open();
    gates.get("a1")!.open();
    await tick();
    // Two slots free: a's turn, then b's: b does not wait behind a's remaining four.
    expect(started).toEqual(["a0", "a1", "a2", "b0"]);
    for (const name of ["a2", "b0"]) gates.get(name)!.open();
    await tick();
    expect(started.slice(4)).toEqual(["a3", "b1"]);
    for (const g of gates.values()) g.open();
    for (let i = 0; i < 4; i++) await tick();
    for (const g of gates.values()) g.open();
    expect(await Promise.all(runs)).toEqual(["a0", "a1", "a2", "a3", "a4", "a5", "b0", "b1"]);
    expect(admitted.slice(0, 2)).toEqual([
      ["a", 0],
      ["a", 0],
    ]);
    expect(admitted.find(([t]) => t === "b")).toEqual(["b", 50]);
  });

  it("tryRun starts work only in a free turn", async () => {
    const scheduler = new WorkScheduler({ concurrency: 1 });
    const g = gate();
    const first = scheduler.tryRun("a", () => g.promise);
    expect(first).toBeDefined();
    expect(scheduler.tryRun("b", async () => "no")).toBeUndefined();
    g.open();
    await first;
    expect(await scheduler.tryRun("b", async () => "yes")).toBe("yes");
  });

  it("runs a suspect alone: it waits for running work to end, and holds new work back until released", async () => {
    const scheduler = new WorkScheduler({ concurrency: 4 });
    const running = gate();
    const before = scheduler.run("a", () => running.promise);
    let alone = false;
    const isolated = scheduler.alone("suspect").then(() => (alone = true));
    await tick();
    expect(alone).toBe(false); // other work still runs
    let after = false;
    const later = scheduler.run("b", async () => (after = true));
    expect(scheduler.tryRun("c", async () => undefined)).toBeUndefined();
    running.open();
    await before;
    await isolated;
    expect(scheduler.holds("suspect")).toBe(true);
    expect(scheduler.load).toMatchObject({ running: 0, isolated: true });
    await tick();
    expect(after).toBe(false); // held back while the suspect has the instance
    scheduler.release("other-task"); // not the holder: nothing changes
    expect(scheduler.holds("suspect")).toBe(true);
    scheduler.release("suspect");
    await later;
    expect(after).toBe(true);
    expect(scheduler.holds("suspect")).toBe(false);
  });

  it("holds new work back for at most isolationWaitMs: then it runs, and the suspect takes the first idle moment", async () => {
    let now = 0;
    const scheduler = new WorkScheduler({ concurrency: 4, isolationWaitMs: 1_000, clock: () => now });
    const long = gate();
    const running = scheduler.run("a", () => long.promise); // an hours-long handler
    let alone = false;
    const isolated = scheduler.alone("suspect").then(() => (alone = true));
    expect(scheduler.tryRun("b", async () => undefined)).toBeUndefined(); // held back: the instance drains
    now = 1_000; // the suspect has waited isolationWaitMs
    const meanwhile = gate();
    const other = scheduler.tryRun("b", () => meanwhile.promise);
    expect(other).toBeDefined(); // new work runs again
    long.open();
    await running;
    await tick();
    expect(alone).toBe(false); // not idle yet: b's work runs
    meanwhile.open();
    await other;
    await isolated;
    expect(scheduler.holds("suspect")).toBe(true);
    scheduler.release("suspect");
  });

  it("stop refuses waiting work and waiting suspects with a ShutdownSignal; running work finishes", async () => {
    const scheduler = new WorkScheduler({ concurrency: 1 });
    const g = gate();
    const running = scheduler.run("a", () => g.promise.then(() => "done"));
    const waiting = scheduler.run("b", async () => "never");
    const suspect = scheduler.alone("s");
    scheduler.stop();
    await expect(waiting).rejects.toBeInstanceOf(ShutdownSignal);
    await expect(suspect).rejects.toBeInstanceOf(ShutdownSignal);
    await expect(scheduler.alone("t")).rejects.toBeInstanceOf(ShutdownSignal);
    g.open();
    expect(await running).toBe("done");
  });
});

describe("DeliverySlots (push deliveries by tenant)", () => {
  it("gives a waiting tenant the next free slot after one of a bursting tenant's, and lets everyone through on shutdown", async () => {
    const slots = new DeliverySlots(1);
    const order: string[] = [];
    await slots.acquire("burst");
    const waits = [
      ...["b1", "b2", "b3", "b4"].map((n) => slots.acquire("burst").then(() => order.push(n))),
      slots.acquire("quiet").then(() => order.push("q1")),
    ];
    for (let i = 0; i < 3; i++) {
      slots.release();
      await tick();
    }
    expect(order).toEqual(["b1", "q1", "b2"]);
    slots.wakeAll();
    await Promise.all(waits);
    expect(order).toHaveLength(5);
    // Shutting down: `now` takes a slot at once, whatever waits.
    await slots.acquire("late", true);
  });

  it("weights a tenant's turns (WORK_TENANT_WEIGHTS)", async () => {
    const slots = new DeliverySlots(1, { heavy: 2 });
    const order: string[] = [];
    await slots.acquire("x");
    const waits = [
      ...["h1", "h2", "h3"].map((n) => slots.acquire("heavy").then(() => order.push(n))),
      ...["p1", "p2"].map((n) => slots.acquire("plain").then(() => order.push(n))),
    ];
    for (let i = 0; i < 5; i++) {
      slots.release();
      await tick();
    }
    await Promise.all(waits);
    expect(order).toEqual(["h1", "h2", "p1", "h3", "p2"]);
  });
});

describe("WORK_* settings", () => {
  it("reads WORK_CONCURRENCY, WORK_TENANT_WEIGHTS and RECOVERY_ISOLATION_WAIT_MS, defaults 128, none and 30 s", () => {
    expect(EnvReader.load({}, readWorkSettings)).toEqual({
      concurrency: 128,
      tenantWeights: {},
      isolationWaitMs: 30_000,
    });
    expect(
      EnvReader.load(
        { WORK_CONCURRENCY: "8", WORK_TENANT_WEIGHTS: "acme=3, batch=0.25", RECOVERY_ISOLATION_WAIT_MS: "0" },
        readWorkSettings,
      ),
    ).toEqual({ concurrency: 8, tenantWeights: { acme: 3, batch: 0.25 }, isolationWaitMs: 0 });
  });

  it("names each bad entry at start", () => {
    expect(() =>
      EnvReader.load({ WORK_CONCURRENCY: "0", WORK_TENANT_WEIGHTS: "acme=0,=2,solo" }, readWorkSettings),
    ).toThrow(
      /WORK_TENANT_WEIGHTS must be a comma-separated list of tenant=weight with weights from 0.01 to 1000 \(got "acme=0"\)[\s\S]*got "=2"[\s\S]*got "solo"[\s\S]*WORK_CONCURRENCY must be a whole number between 1 and 100000/,
    );
  });
});
