// The side-by-side figures: the reference SDK server (in-memory store; its DatabaseTaskStore on Postgres) and
// ours (in-memory store, MongoDB), driven by one closed-loop load generator in interleaved rounds
// (A B C … A B C …) at each concurrency. Method: README.md.
import { randomUUID } from "node:crypto";
import { procCpuMs, spawnChild, type BenchChild, type Usage } from "./lib/ipc.js";
import { startPostgres } from "./lib/postgres-server.js";
import { dropDatabase, type StoreServer } from "./lib/store-server.js";
import { latencySummary, mb, round2, table as renderTable } from "./lib/summary.js";
import type { RoundResult, RoundSpec } from "./load/load-generator.js";
import type { Protocol } from "./load/protocols.js";

export interface CompareOptions {
  roundMs: number;
  warmupMs: number;
  rounds: number;
  concurrencies: number[];
}

interface Target {
  name: string;
  server: BenchChild;
  protocol: Protocol;
  /** Counts MongoDB commands (our server on MongoDB). */
  countsCommands: boolean;
}

interface Tally {
  count: number;
  errors: number;
  firstError?: string;
  elapsedMs: number;
  latenciesMs: number[];
  cpuMs: number;
  loadCpuMs: number;
  storeServerCpuMs: number;
  commands: Record<string, number>;
  rssBytes: number;
  /** Each measured round's tasks and server CPU, for the median of per-round ratios. */
  rounds: Array<{ count: number; cpuMs: number }>;
}

export interface CompareRow {
  target: string;
  protocol: Protocol;
  concurrency: number;
  requests: number;
  errors: number;
  firstError?: string;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  cpuSecPer1kTasks: number;
  /** The load generator's CPU per 1 000 tasks: on 2 cores, what the client takes from the server. */
  loadGeneratorCpuSecPer1kTasks: number;
  rssMb: number;
  storeCommandsPerTask: number | null;
  storeCommandsByName: Record<string, number> | null;
  storeServerCpuSecPer1kTasks: number | null;
  /** Against the reference server's JSON-RPC row at the same concurrency (the only binding it serves here). */
  vsReference: { reqPerSec: number; cpuPerTask: number };
  /**
   * Against the reference on Postgres (durable vs durable), when Postgres ran: summed figures, and the median
   * over rounds of (this row's CPU per task in round r) / (the reference's on Postgres in round r).
   */
  vsReferencePostgres: { reqPerSec: number; cpuPerTask: number; cpuPerTaskMedianOfRounds: number } | null;
}

const commandTotal = (c: Record<string, number>) => Object.values(c).reduce((a, b) => a + b, 0);

function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)])
      .filter(([, v]) => (v as number) > 0),
  );
}

async function measuredRound(
  load: BenchChild,
  target: Target,
  store: StoreServer,
  spec: RoundSpec,
  tally: Tally,
): Promise<void> {
  // Counted by the test server when it is the store (our server then runs without driver command monitoring,
  // which costs it CPU the reference does not pay), else by our server's driver.
  const storeCommands = () =>
    store.commands ? store.commands() : target.server.call<Record<string, number>>("storeCommands");
  const before = await target.server.call<Usage>("stats");
  const commandsBefore = target.countsCommands ? await storeCommands() : {};
  const storeBefore = target.countsCommands && store.pid ? procCpuMs(store.pid) : 0;
  const result = await load.call<RoundResult>("round", spec);
  const after = await target.server.call<Usage>("stats");
  if (target.countsCommands) {
    const commands = diff(await storeCommands(), commandsBefore);
    for (const [k, v] of Object.entries(commands)) tally.commands[k] = (tally.commands[k] ?? 0) + v;
    if (store.pid) tally.storeServerCpuMs += procCpuMs(store.pid) - storeBefore;
  }
  tally.count += result.count;
  tally.errors += result.errors;
  if (result.firstError) tally.firstError ??= result.firstError;
  tally.elapsedMs += result.elapsedMs;
  tally.latenciesMs.push(...result.latenciesMs);
  tally.cpuMs += after.cpuMs - before.cpuMs;
  tally.loadCpuMs += result.cpuMs;
  tally.rssBytes = Math.max(tally.rssBytes, after.rssBytes);
  tally.rounds.push({ count: result.count, cpuMs: after.cpuMs - before.cpuMs });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export async function runCompare(
  options: CompareOptions,
  store: StoreServer,
): Promise<{ rows: CompareRow[]; printed: string; referencePostgres: string }> {
  const servers: BenchChild[] = [];
  const db = `bench_${randomUUID().slice(0, 8)}`;
  const postgres = await startPostgres();
  if (typeof postgres === "string") console.log(`  reference on Postgres skipped: ${postgres}`);
  else console.log(`  reference on Postgres: ${postgres.description}`);
  const start = async (name: string, script: string, env: Record<string, string> = {}) => {
    const child = await spawnChild(name, script, { env });
    servers.push(child);
    return child;
  };
  try {
    const reference = await start("reference server", "bench/servers/reference-server.ts");
    const referencePg =
      typeof postgres === "string"
        ? undefined
        : await start("reference server (postgres)", "bench/servers/reference-server.ts", {
            REFERENCE_STORE: "postgres",
            DATABASE_URL: postgres.url,
          });
    const memory = await start("our server (memory)", "bench/servers/our-server.ts", { STORE: "memory", PORT: "0" });
    const mongo = await start("our server (mongodb)", "bench/servers/our-server.ts", {
      STORE: "mongodb",
      PORT: "0",
      MONGODB_URI: store.uri,
      MONGODB_DB: db,
      BENCH_COUNT_COMMANDS: store.commands ? "0" : "1",
    });
    const load = await start("load generator", "bench/load/load-generator.ts");
    const targets: Target[] = [
      {
        name: "reference (@a2a-js/sdk 1.3.0, in-memory)",
        server: reference,
        protocol: "jsonrpc",
        countsCommands: false,
      },
      ...(referencePg
        ? [
            {
              name: "reference (@a2a-js/sdk 1.3.0, Postgres)",
              server: referencePg,
              protocol: "jsonrpc" as const,
              countsCommands: false,
            },
          ]
        : []),
      ...(["jsonrpc", "rest", "grpc"] as const).map((protocol) => ({
        name: "ours, in-memory store",
        server: memory,
        protocol,
        countsCommands: false,
      })),
      ...(["jsonrpc", "rest", "grpc"] as const).map((protocol) => ({
        name: "ours, MongoDB",
        server: mongo,
        protocol,
        countsCommands: true,
      })),
    ];
    const rows: CompareRow[] = [];
    for (const concurrency of options.concurrencies) {
      const spec = (target: Target, durationMs: number): RoundSpec => ({
        baseUrl: `http://127.0.0.1:${target.server.ready["port"] as number}`,
        protocol: target.protocol,
        concurrency,
        durationMs,
        skill: "echo",
        expectState: "completed",
      });
      console.log(
        `  concurrency ${concurrency}: warm-up, then ${options.rounds} interleaved rounds of ${targets.length} targets…`,
      );
      for (const target of targets) await load.call<RoundResult>("round", spec(target, options.warmupMs));
      const tallies = targets.map((): Tally => ({
        count: 0,
        errors: 0,
        elapsedMs: 0,
        latenciesMs: [],
        cpuMs: 0,
        loadCpuMs: 0,
        storeServerCpuMs: 0,
        commands: {},
        rssBytes: 0,
        rounds: [],
      }));
      for (let r = 0; r < options.rounds; r++) {
        for (const [i, target] of targets.entries())
          await measuredRound(load, target, store, spec(target, options.roundMs), tallies[i]!);
      }
      const ref = tallies[0]!;
      const refRate = (ref.count / ref.elapsedMs) * 1000;
      const refCpuPerTask = ref.cpuMs / ref.count;
      const pg = referencePg ? tallies[1]! : undefined;
      for (const [i, target] of targets.entries()) {
        const t = tallies[i]!;
        const reqPerSec = (t.count / t.elapsedMs) * 1000;
        const cpuPerTask = t.cpuMs / t.count;
        rows.push({
          target: target.name,
          protocol: target.protocol,
          concurrency,
          requests: t.count,
          errors: t.errors,
          ...(t.firstError ? { firstError: t.firstError } : {}),
          reqPerSec: Math.round(reqPerSec),
          ...latencySummary(t.latenciesMs),
          cpuSecPer1kTasks: round2(cpuPerTask),
          loadGeneratorCpuSecPer1kTasks: round2(t.loadCpuMs / t.count),
          rssMb: mb(t.rssBytes),
          storeCommandsPerTask: target.countsCommands ? round2(commandTotal(t.commands) / t.count) : null,
          storeCommandsByName: target.countsCommands
            ? Object.fromEntries(Object.entries(t.commands).map(([k, v]) => [k, round2(v / t.count)]))
            : null,
          storeServerCpuSecPer1kTasks: target.countsCommands && store.pid ? round2(t.storeServerCpuMs / t.count) : null,
          vsReference: { reqPerSec: round2(reqPerSec / refRate), cpuPerTask: round2(cpuPerTask / refCpuPerTask) },
          vsReferencePostgres: pg
            ? {
                reqPerSec: round2(reqPerSec / ((pg.count / pg.elapsedMs) * 1000)),
                cpuPerTask: round2(cpuPerTask / (pg.cpuMs / pg.count)),
                cpuPerTaskMedianOfRounds: round2(
                  median(t.rounds.map((r, k) => r.cpuMs / r.count / (pg.rounds[k]!.cpuMs / pg.rounds[k]!.count))),
                ),
              }
            : null,
        });
      }
    }
    const table = renderTable(
      [
        "server",
        "binding",
        "conc",
        "req/s",
        "p50 ms",
        "p99 ms",
        "CPU s/1k",
        "RSS MB",
        "cmds/task",
        "store CPU s/1k",
        "× ref req/s",
        "× ref CPU",
        "× pg ref CPU",
        "errors",
      ],
      rows.map((r) => [
        r.target,
        r.protocol,
        r.concurrency,
        r.reqPerSec,
        r.p50Ms,
        r.p99Ms,
        r.cpuSecPer1kTasks,
        r.rssMb,
        r.storeCommandsPerTask ?? "–",
        r.storeServerCpuSecPer1kTasks ?? "–",
        r.vsReference.reqPerSec,
        r.vsReference.cpuPerTask,
        r.vsReferencePostgres?.cpuPerTaskMedianOfRounds ?? "–",
        r.errors,
      ]),
    );
    // What "CPU" counts, said next to the figures: each server process's own CPU only.
    const note = [
      "CPU s/1k: the server process's own user + system CPU (process.cpuUsage) per 1 000 tasks; not counted in it: the",
      "load generator, the store's own CPU (the wire-protocol test server's is the store CPU column; the Postgres",
      "server's, all its processes, is not measured). × ref: against the reference in memory, summed rounds; × pg ref",
      "CPU: against the reference on Postgres, the median of per-round ratios.",
    ].join("\n");
    const printed = `${table}\n\n${note}`;
    return {
      rows,
      printed,
      referencePostgres: typeof postgres === "string" ? `skipped: ${postgres}` : postgres.description,
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    try {
      await dropDatabase(store.uri, db);
    } finally {
      if (typeof postgres !== "string") await postgres.stop();
    }
  }
}
