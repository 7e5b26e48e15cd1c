// The scale figures, all on our server with MongoDB: (a) task creation rate with 0 and with N waiting tasks in
// the store, (b) RSS idle and with N waiting tasks, (c) one more transition on a task with a long event log
// against a fresh task, (d) RSS with many resubscribe streams, and commit → subscriber latency. Method: README.md.
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { connectMongoStore } from "../src/store/open-store.js";
import type { TaskStore } from "../src/store/task-store.js";
import { procCpuMs, procRssBytes, spawnChild, wallNow, type BenchChild, type Usage } from "./lib/ipc.js";
import { dropDatabase, type StoreServer } from "./lib/store-server.js";
import { latencySummary, mb, round2, table } from "./lib/summary.js";
import type { RoundResult } from "./load/load-generator.js";
import type { SendOp } from "./load/protocols.js";
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

type Sent = { taskId: string; state: string };

const CREATE_CONCURRENCY = 16;
const REFINE: Record<string, unknown> = { action: "refine", feedback: "once more" };
/** Refines measured per batch in (c), and batches per kind. */
const TRANSITION_SAMPLES = 10;
const TRANSITION_BATCHES = 3;
/** (c) stops growing its long task after this long, and reports the events it reached. */
const LONG_TASK_BUILD_LIMIT_MS = 180_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const commandTotal = async (server: BenchChild) =>
  Object.values(await server.call<Record<string, number>>("storeCommands")).reduce((a, b) => a + b, 0);

interface Ctx {
  store: StoreServer;
  admin: MongoClient;
  db: string;
  load: BenchChild;
  server: BenchChild;
  baseUrl: string;
}

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

/** (c) Refines one at a time, on the same long task or one each on fresh tasks: latency, CPU, commands. */
async function refineBatch(
  ctx: Ctx,
  reader: TaskStore,
  taskIds: string[],
  historyLength?: number,
): Promise<{ latenciesMs: number[]; cpuMs: number; commands: number; events: number }> {
  const distinct = [...new Set(taskIds)];
  const versions = await Promise.all(distinct.map(async (id) => (await reader.get(id))!.version));
  const before = await ctx.server.call<Usage>("stats");
  const commandsBefore = await commandTotal(ctx.server);
  const ops: SendOp[] = taskIds.map((taskId) => ({
    taskId,
    data: REFINE,
    ...(historyLength === undefined ? {} : { historyLength }),
  }));
  const { latenciesMs, results } = await ctx.load.call<{ latenciesMs: number[]; results: Sent[] }>("sequence", {
    baseUrl: ctx.baseUrl,
    protocol: "jsonrpc",
    ops,
  });
  const after = await ctx.server.call<Usage>("stats");
  const commands = (await commandTotal(ctx.server)) - commandsBefore;
  const bad = results.find((r) => r.state !== "input-required");
  if (bad) throw new Error(`a refine left task ${bad.taskId} ${bad.state}`);
  const versionsAfter = await Promise.all(distinct.map(async (id) => (await reader.get(id))!.version));
  const events = versionsAfter.reduce((sum, v, i) => sum + v - versions[i]!, 0);
  return { latenciesMs, cpuMs: after.cpuMs - before.cpuMs, commands, events };
}

async function longTaskFigures(ctx: Ctx, reader: TaskStore, targetEvents: number): Promise<Record<string, unknown>> {
  const [long] = await ctx.load.call<Sent[]>("createTasks", {
    baseUrl: ctx.baseUrl,
    skill: "approval-gate",
    count: 1,
    concurrency: 1,
  });
  const built = performance.now();
  // Grow the log by real transitions (refine loops), in batches of 10, until it holds targetEvents events or
  // the time limit is reached.
  const eventsNow = async () => (await reader.get(long!.taskId))!.version + 1;
  const refines = (n: number) =>
    ctx.load.call("sequence", {
      baseUrl: ctx.baseUrl,
      protocol: "jsonrpc",
      ops: Array.from({ length: n }, (): SendOp => ({ taskId: long!.taskId, data: REFINE })),
    });
  const initial = await eventsNow();
  await refines(1);
  const perRefine = Math.max(1, (await eventsNow()) - initial);
  for (
    let now = await eventsNow();
    now < targetEvents && performance.now() - built < LONG_TASK_BUILD_LIMIT_MS;
    now = await eventsNow()
  ) {
    await refines(Math.min(10, Math.ceil((targetEvents - now) / perRefine)));
  }
  const buildSec = round2((performance.now() - built) / 1000);
  const eventsAtStart = (await reader.get(long!.taskId))!.version + 1;
  const fresh = await ctx.load.call<Sent[]>("createTasks", {
    baseUrl: ctx.baseUrl,
    skill: "approval-gate",
    count: TRANSITION_SAMPLES * TRANSITION_BATCHES,
    concurrency: 4,
  });
  // Each refine twice over: answered with the whole history (what a 0.3 send without historyLength gets), and
  // with historyLength 1 (the transition itself: the answer no longer grows with the history).
  const empty = () => ({ latenciesMs: [] as number[], cpuMs: 0, commands: 0, events: 0, n: 0 });
  const acc = { long: empty(), fresh: empty(), longBounded: empty(), freshBounded: empty() };
  for (let b = 0; b < TRANSITION_BATCHES; b++) {
    const ids = {
      long: Array<string>(TRANSITION_SAMPLES).fill(long!.taskId),
      fresh: fresh.slice(b * TRANSITION_SAMPLES, (b + 1) * TRANSITION_SAMPLES).map((t) => t.taskId),
    };
    const runs = [
      ["long", ids.long, undefined],
      ["fresh", ids.fresh, undefined],
      ["longBounded", ids.long, 1],
      ["freshBounded", ids.fresh, 1],
    ] as const;
    for (const [kind, taskIds, historyLength] of runs) {
      const r = await refineBatch(ctx, reader, [...taskIds], historyLength);
      const a = acc[kind];
      a.latenciesMs.push(...r.latenciesMs);
      a.cpuMs += r.cpuMs;
      a.commands += r.commands;
      a.events += r.events;
      a.n += taskIds.length;
    }
  }
  const summary = (a: (typeof acc)["long"]) => ({
    ...latencySummary(a.latenciesMs),
    cpuMsPerTransition: round2(a.cpuMs / a.events),
    storeCommandsPerTransition: round2(a.commands / a.events),
    eventsPerRefine: round2(a.events / a.n),
  });
  const [longFigures, freshFigures, longBounded, freshBounded] = [
    summary(acc.long),
    summary(acc.fresh),
    summary(acc.longBounded),
    summary(acc.freshBounded),
  ];
  return {
    eventsAtStart,
    buildSec,
    longTask: longFigures,
    freshTask: freshFigures,
    cpuRatio: round2(longFigures.cpuMsPerTransition / freshFigures.cpuMsPerTransition),
    historyLength1: {
      longTask: longBounded,
      freshTask: freshBounded,
      cpuRatio: round2(longBounded.cpuMsPerTransition / freshBounded.cpuMsPerTransition),
    },
  };
}

/**
 * (d) Opens `streams` resubscribe streams on one working task (the `conformance-cancellable` skill), cancels
 * it, and takes, for each stream, the time from the cancel's first commit returning in the server to the
 * stream receiving its next event. Resolves with the server's RSS while the streams were open.
 */
async function fanOut(
  ctx: Ctx,
  streams: number,
): Promise<{
  latenciesMs: number[];
  ownCommitMs: number[];
  commits: number;
  missed: number;
  rssBytes: number;
  openSec: number;
  commands: number;
  cpuMs: number;
  loadCpuMs: number;
}> {
  const [task] = await ctx.load.call<Sent[]>("createTasks", {
    baseUrl: ctx.baseUrl,
    skill: "conformance-cancellable",
    count: 1,
    concurrency: 1,
    blocking: false,
  });
  const opened = performance.now();
  await ctx.load.call("openStreams", { baseUrl: ctx.baseUrl, taskId: task!.taskId, count: streams, batch: 500 });
  const openSec = (performance.now() - opened) / 1000;
  const { rssBytes } = await ctx.server.call<Usage>("gc");
  const commandsBefore = await commandTotal(ctx.server);
  const cpuBefore = (await ctx.server.call<Usage>("stats")).cpuMs;
  const loadCpuBefore = procCpuMs(ctx.load.pid);
  const from = wallNow();
  const [cancelled] = (
    await ctx.load.call<{ results: Sent[] }>("sequence", {
      baseUrl: ctx.baseUrl,
      protocol: "jsonrpc",
      ops: [{ cancel: task!.taskId }],
    })
  ).results;
  if (cancelled?.state !== "canceled") throw new Error(`cancel left task ${task!.taskId} ${cancelled?.state ?? "?"}`);
  // Wait (at most 10 s) until every stream got an event after the cancel; a stream that got none is "missed".
  let receipts: number[][] = [];
  for (let polls = 0; polls < 50; polls++) {
    await sleep(200);
    receipts = await ctx.load.call<number[][]>("streamReceipts", { limit: streams });
    if (receipts.every((times) => times.some((t) => t >= from))) break;
  }
  const commands = (await commandTotal(ctx.server)) - commandsBefore;
  const cpuMs = (await ctx.server.call<Usage>("stats")).cpuMs - cpuBefore;
  const loadCpuMs = procCpuMs(ctx.load.pid) - loadCpuBefore;
  const commits = (await ctx.server.call<number[]>("commitTimes", task!.taskId)).filter((c) => c >= from);
  const commit = commits[0];
  if (commit === undefined) throw new Error(`no commit of task ${task!.taskId} after the cancel`);
  await ctx.load.call("closeStreams");
  const latenciesMs: number[] = [];
  // The cancel commits twice (cancelling, then cancelled by the driver) and only the second carries a status
  // update: also measured from the last commit before the receipt, which leaves the driver's work out.
  const ownCommitMs: number[] = [];
  let missed = 0;
  for (const times of receipts) {
    const got = times.find((t) => t >= commit);
    if (got === undefined) missed++;
    else {
      latenciesMs.push(got - commit);
      ownCommitMs.push(got - commits.filter((c) => c <= got).at(-1)!);
    }
  }
  return { latenciesMs, ownCommitMs, commits: commits.length, missed, rssBytes, openSec, commands, cpuMs, loadCpuMs };
}

async function streamFigures(ctx: Ctx, options: ScaleOptions): Promise<Record<string, unknown>> {
  const idle = await ctx.server.call<Usage>("gc");
  const few = Math.min(options.latencyStreams, options.streams);
  const samples = {
    latenciesMs: [] as number[],
    ownCommitMs: [] as number[],
    commits: 0,
    missed: 0,
    rssBytes: 0,
    commands: 0,
    cpuMs: 0,
    loadCpuMs: 0,
  };
  for (let i = 0; i < options.triggers; i++) {
    const r = await fanOut(ctx, few);
    samples.latenciesMs.push(...r.latenciesMs);
    samples.ownCommitMs.push(...r.ownCommitMs);
    samples.commits += r.commits;
    samples.missed += r.missed;
    samples.rssBytes = Math.max(samples.rssBytes, r.rssBytes);
    samples.commands += r.commands;
    samples.cpuMs += r.cpuMs;
    samples.loadCpuMs += r.loadCpuMs;
  }
  const all = await fanOut(ctx, options.streams);
  // Store commands from the cancel until every stream got its event: the cancel's own, plus the fan-out's reads.
  // Our server's CPU from the cancel until every stream got its event (and ended), per stream: less noisy
  // than the latency on a shared machine. The load generator's too: its receiving is part of the latency.
  const latency = (
    r: { latenciesMs: number[]; ownCommitMs: number[]; missed: number },
    perCancel: { commands: number; commits: number; cpuMs: number; loadCpuMs: number },
    streams: number,
  ) => {
    const own = latencySummary(r.ownCommitMs);
    return {
      ...latencySummary(r.latenciesMs),
      samples: r.latenciesMs.length,
      missed: r.missed,
      p50MsFromItsCommit: own.p50Ms,
      p99MsFromItsCommit: own.p99Ms,
      storeCommandsPerCancel: round2(perCancel.commands),
      commitsPerCancel: round2(perCancel.commits),
      serverCpuUsPerStream: Math.round((perCancel.cpuMs * 1000) / streams),
      loadGeneratorCpuUsPerStream: Math.round((perCancel.loadCpuMs * 1000) / streams),
    };
  };
  return {
    rssIdleMb: mb(idle.rssBytes),
    [`rssAt${few}StreamsMb`]: mb(samples.rssBytes),
    [`rssAt${options.streams}StreamsMb`]: mb(all.rssBytes),
    [`openSecFor${options.streams}Streams`]: round2(all.openSec),
    [`commitToSubscriberAt${few}Streams`]: latency(
      samples,
      {
        commands: samples.commands / options.triggers,
        commits: samples.commits / options.triggers,
        cpuMs: samples.cpuMs / options.triggers,
        loadCpuMs: samples.loadCpuMs / options.triggers,
      },
      few,
    ),
    [`commitToSubscriberAt${options.streams}Streams`]: latency(all, all, options.streams),
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
