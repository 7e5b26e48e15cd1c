// The scale figures, all on our server with MongoDB: (a) task creation rate with 0 and with N waiting tasks in
// the store, (b) RSS idle and with N waiting tasks, (c) one more transition on a task with a long event log
// against a fresh task, (d) RSS with many resubscribe streams, and commit → subscriber latency. Method: README.md.
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { connectMongoStore } from "../src/store/open-store.js";
import { procCpuMs, procRssBytes, spawnChild, type BenchChild, type Usage } from "./lib/ipc.js";
import { dropDatabase, type StoreServer } from "./lib/store-server.js";
import { latencySummary, mb, round2, table } from "./lib/summary.js";
import type { RoundResult } from "./load/load-generator.js";
import { commandTotal, type Ctx, type Sent } from "./scale-context.js";
import { longTaskFigures } from "./scale-long-task.js";
import { streamFigures } from "./scale-streams.js";
import { seedWaiting } from "./seed-waiting.js";

/** The parts of the scale figures: (a) and (b) together, (c), (d). */
export const SCALE_PARTS = ["creation", "long", "streams"] as const;
export type ScalePart = (typeof SCALE_PARTS)[number];

export interface ScaleOptions {
  parts: readonly ScalePart[];
  waiting: number;
  events: number;
  streams: number;
  latencyStreams: number;
  triggers: number;
  roundMs: number;
}

const CREATE_CONCURRENCY = 16;

async function startServer(ctx: Pick<Ctx, "store" | "db">): Promise<BenchChild> {
  // Start-up recovery reads every unfinished task: after seeding, starting can take minutes.
  return spawnChild("our server (mongodb, scale)", "bench/servers/our-server.ts", {
    env: { STORE: "mongodb", PORT: "0", MONGODB_URI: ctx.store.uri, MONGODB_DB: ctx.db, BENCH_TRACE_COMMITS: "1" },
    readyTimeoutMs: 600_000,
    // BENCH_CPU_PROF_DIR=dir: a V8 CPU profile of our server, written there when it stops.
    ...(process.env["BENCH_CPU_PROF_DIR"]
      ? {
          nodeArgs: [
            "--cpu-prof",
            "--cpu-prof-dir",
            process.env["BENCH_CPU_PROF_DIR"],
            ...(process.env["BENCH_CPU_PROF_INTERVAL_US"]
              ? ["--cpu-prof-interval", process.env["BENCH_CPU_PROF_INTERVAL_US"]]
              : []),
          ],
        }
      : {}),
  });
}

/** The store's serverStatus counters of what queries examined (index keys, documents), on MongoDB and the test server. */
async function examined(admin: MongoClient): Promise<{ keys: number; docs: number }> {
  const status = await admin.db("admin").command({ serverStatus: 1 });
  const q = (status["metrics"] as { queryExecutor?: { scanned?: unknown; scannedObjects?: unknown } } | undefined)
    ?.queryExecutor;
  return { keys: Number(q?.scanned ?? Number.NaN), docs: Number(q?.scannedObjects ?? Number.NaN) };
}

/**
 * Approval tasks created closed-loop for one round: rate, latency, our CPU, store commands per task, and the
 * index keys and documents the store's queries examined per task (the whole store's, background work included).
 */
async function creationRound(ctx: Ctx, durationMs: number): Promise<Record<string, number>> {
  const before = await ctx.server.call<Usage>("stats");
  const commandsBefore = await commandTotal(ctx.server);
  const storeBefore = ctx.store.pid ? procCpuMs(ctx.store.pid) : 0;
  const examinedBefore = await examined(ctx.admin);
  const r = await ctx.load.call<RoundResult>("round", {
    baseUrl: ctx.baseUrl,
    protocol: "jsonrpc",
    concurrency: CREATE_CONCURRENCY,
    durationMs,
    skill: "approval-gate",
    expectState: "input-required",
  });
  if (r.count === 0) throw new Error(`no approval task was created: ${r.firstError ?? "?"}`);
  const after = await ctx.server.call<Usage>("stats");
  const examinedAfter = await examined(ctx.admin);
  return {
    tasksPerSec: Math.round((r.count / r.elapsedMs) * 1000),
    ...latencySummary(r.latenciesMs),
    cpuSecPer1kTasks: round2((after.cpuMs - before.cpuMs) / r.count),
    storeCommandsPerTask: round2(((await commandTotal(ctx.server)) - commandsBefore) / r.count),
    storeKeysExaminedPerTask: round2((examinedAfter.keys - examinedBefore.keys) / r.count),
    storeDocsExaminedPerTask: round2((examinedAfter.docs - examinedBefore.docs) / r.count),
    ...(ctx.store.pid
      ? { storeServerCpuSecPer1kTasks: round2((procCpuMs(ctx.store.pid) - storeBefore) / r.count) }
      : {}),
    errors: r.errors,
  };
}

export async function runScale(
  options: ScaleOptions,
  store: StoreServer,
): Promise<{ figures: Record<string, unknown>; printed: string }> {
  const db = `bench_scale_${randomUUID().slice(0, 8)}`;
  const load = await spawnChild("load generator", "bench/load/load-generator.ts");
  const reader = await connectMongoStore(store.uri, db);
  const admin = await MongoClient.connect(store.uri);
  let server = await startServer({ store, db });
  const ctx = (): Ctx => ({
    store,
    admin,
    db,
    load,
    server,
    baseUrl: `http://127.0.0.1:${server.ready["port"] as number}`,
  });
  const runs = (part: ScalePart) => options.parts.includes(part);
  const warmUp = () => creationRound(ctx(), Math.min(1000, options.roundMs));
  try {
    const figures: Record<string, unknown> = {};
    const rows: string[][] = [];
    // (a), (b): warm up, then idle RSS and the creation rate with (almost) no waiting task.
    await warmUp();
    const idle = await server.call<Usage>("gc");
    const empty = runs("creation") ? await creationRound(ctx(), options.roundMs) : undefined;
    if (empty) console.log(`  (a) ${empty["tasksPerSec"]} approval tasks/s on the empty store`);
    // (c) and (d) before the seeding, so that the waiting tasks of (a) and (b) do not weigh on them.
    if (runs("long")) {
      console.log(`  (c) growing a task to ${options.events} events…`);
      const l = (figures["longTask"] = await longTaskFigures(ctx(), reader.store, options.events)) as Record<
        string,
        Record<string, number>
      >;
      const h = l["historyLength1"] as unknown as Record<string, Record<string, number>>;
      rows.push(
        [
          `(c) CPU per transition, ${String(l["eventsAtStart"])}-event task vs fresh`,
          `${l["longTask"]!["cpuMsPerTransition"]} vs ${l["freshTask"]!["cpuMsPerTransition"]} ms (×${String(l["cpuRatio"])})`,
          "the same",
        ],
        [`(c) refine p50, long vs fresh`, `${l["longTask"]!["p50Ms"]} vs ${l["freshTask"]!["p50Ms"]} ms`, "the same"],
        [
          `(c) the same, answered with historyLength 1: CPU`,
          `${h["longTask"]!["cpuMsPerTransition"]} vs ${h["freshTask"]!["cpuMsPerTransition"]} ms (×${String(h["cpuRatio"])})`,
          "the same",
        ],
        [
          `(c) the same, answered with historyLength 1: p50`,
          `${h["longTask"]!["p50Ms"]} vs ${h["freshTask"]!["p50Ms"]} ms`,
          "the same",
        ],
      );
    }
    if (runs("streams")) {
      console.log(`  (d) streams…`);
      const s = (figures["streams"] = await streamFigures(ctx(), options)) as Record<string, unknown>;
      const few = Math.min(options.latencyStreams, options.streams);
      const lat = (k: string) => s[k] as { p99Ms: number; p99MsFromItsCommit: number };
      rows.push(
        [
          `(d) RSS with ${options.streams} streams`,
          `${String(s[`rssAt${options.streams}StreamsMb`])} MB (idle ${String(s["rssIdleMb"])} MB)`,
          "< 1024 MB",
        ],
        [
          `(d) commit → subscriber p99, ${few} streams`,
          `${lat(`commitToSubscriberAt${few}Streams`).p99Ms} ms`,
          "≤ 20 ms",
        ],
        [
          `(d) the same from the commit carrying the update`,
          `${lat(`commitToSubscriberAt${few}Streams`).p99MsFromItsCommit} ms`,
          "≤ 20 ms",
        ],
        [
          `(d) commit → subscriber p99, ${options.streams} streams`,
          `${lat(`commitToSubscriberAt${options.streams}Streams`).p99Ms} ms`,
          "–",
        ],
      );
    }
    if (empty) {
      console.log(`  (a) seeding ${options.waiting} waiting tasks…`);
      const [template] = await ctx().load.call<Sent[]>("createTasks", {
        baseUrl: ctx().baseUrl,
        skill: "approval-gate",
        count: 1,
        concurrency: 1,
      });
      const seeded = await seedWaiting(store.uri, db, template!.taskId, options.waiting);
      // The server restarts onto the full store (start-up recovery reads every unfinished task), as after a deploy.
      console.log(
        `  seeded at ${seeded.perSec}/s (${seeded.bulk ? "bulk inserts" : "store API"}); restarting our server onto them…`,
      );
      await server.stop();
      const restarting = performance.now();
      server = await startServer({ store, db });
      const restartSec = round2((performance.now() - restarting) / 1000);
      // The same state as the idle reading: one warm-up round (a fresh process runs cold), then a full GC.
      await warmUp();
      const waitingRss = await server.call<Usage>("gc");
      const storeRss = store.pid ? { storeServerRssMb: mb(procRssBytes(store.pid)) } : {};
      const full = await creationRound(ctx(), options.roundMs);
      const c = (figures["creation"] = {
        alsoInTheStore: "the tasks that the first round, (c) and (d) created",
        withNoneWaiting: empty,
        [`with${options.waiting}Waiting`]: full,
        rateRatio: round2(full["tasksPerSec"]! / empty["tasksPerSec"]!),
        seeded,
      });
      const w = (figures["waitingRss"] = {
        idleMb: mb(idle.rssBytes),
        [`with${options.waiting}WaitingMb`]: mb(waitingRss.rssBytes),
        deltaMb: mb(waitingRss.rssBytes - idle.rssBytes),
        restartSec,
        restartListenMs: server.ready["listenMs"],
        ...storeRss,
      }) as Record<string, number>;
      rows.unshift(
        [
          `(a) creation rate, 0 → ${options.waiting} waiting`,
          `${empty["tasksPerSec"]} → ${full["tasksPerSec"]} tasks/s (×${String(c.rateRatio)})`,
          "within 10 %",
        ],
        [
          `(a) store keys / docs examined per task`,
          `${empty["storeKeysExaminedPerTask"]} / ${empty["storeDocsExaminedPerTask"]} → ${full["storeKeysExaminedPerTask"]} / ${full["storeDocsExaminedPerTask"]}`,
          "the same",
        ],
        [
          `(b) RSS idle → ${options.waiting} waiting (after restart)`,
          `${w["idleMb"]} → ${w[`with${options.waiting}WaitingMb`]} MB (+${w["deltaMb"]} MB)`,
          "within 50 MB",
        ],
      );
    }
    return { figures, printed: table(["figure", "measured", "target"], rows) };
  } finally {
    await server.stop();
    await load.stop();
    await admin.close();
    await reader.store.close();
    await dropDatabase(store.uri, db);
  }
}
