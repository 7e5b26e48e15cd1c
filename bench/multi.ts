// Several instances of our server on one database (`npm run bench -- multi`): (a) failover time after a
// SIGKILL of a task's owner, (b) throughput with 1, 2 and 3 instances under round-robin load, (c) commit →
// subscriber latency across instances. Method: README.md, "Several instances".
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { MongoClient, type Collection } from "mongodb";
import { measureCrossInstanceLatency } from "./cross-instance-latency.js";
import { procCpuMs, spawnChild, wallNow, type BenchChild, type Usage } from "./lib/ipc.js";
import { dropDatabase, type StoreServer } from "./lib/store-server.js";
import { latencySummary, percentile, round2, table } from "./lib/summary.js";
import type { RoundResult, RoundSpec } from "./load/load-generator.js";

export interface MultiOptions {
  failoverSamples: number;
  leaseTtlMs: number;
  leaseHeartbeatMs: number;
  roundMs: number;
  warmupMs: number;
  rounds: number;
  concurrency: number;
  instanceCounts: number[];
  latencyCommits: number;
}

interface Head {
  _id: string;
  version: number;
  status: string;
  leaseOwner?: string | null;
}

export interface Instance {
  id: string;
  child: BenchChild;
  url: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls the task's head every 5 ms until `done` holds; the head then and when it was read. */
async function waitForHead(
  tasks: Collection<Head>,
  runId: string,
  done: (h: Head) => boolean,
  timeoutMs: number,
): Promise<{ head: Head; at: number }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const head = await tasks.findOne({ _id: runId });
    const at = wallNow();
    if (head && done(head)) return { head, at };
    if (Date.now() > deadline)
      throw new Error(`task ${runId}: no such head within ${timeoutMs} ms (last: ${JSON.stringify(head)})`);
    await sleep(5);
  }
}

async function rest(url: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Starts instances of our server on one store (each its own INSTANCE_ID and the lease settings); stops them. */
export function instanceLauncher(
  store: StoreServer,
  lease: { leaseTtlMs: number; leaseHeartbeatMs: number },
  env: Record<string, string> = {},
) {
  const children = new Set<BenchChild>();
  let serial = 0;
  const start = async (db: string, label: string): Promise<Instance> => {
    const id = `${label}-${++serial}`;
    const child = await spawnChild(`our server ${id}`, "bench/servers/our-server.ts", {
      env: {
        STORE: "mongodb",
        PORT: "0",
        MONGODB_URI: store.uri,
        MONGODB_DB: db,
        INSTANCE_ID: id,
        LEASE_TTL_MS: String(lease.leaseTtlMs),
        LEASE_HEARTBEAT_MS: String(lease.leaseHeartbeatMs),
        ...env,
      },
    });
    children.add(child);
    return { id, child, url: `http://127.0.0.1:${child.ready["port"] as number}` };
  };
  const stop = async (instances: Instance[]) => {
    await Promise.all(instances.map((i) => i.child.stop()));
    for (const i of instances) children.delete(i.child);
  };
  return {
    start,
    stop,
    own: (child: BenchChild) => children.add(child),
    stopAll: async () => void (await Promise.all([...children].map((c) => c.stop()))),
  };
}

export async function runMulti(
  options: MultiOptions,
  store: StoreServer,
): Promise<{ figures: Record<string, unknown>; printed: string }> {
  const launcher = instanceLauncher(store, options);
  const startInstance = launcher.start;
  const stop = launcher.stop;
  try {
    const failover = await measureFailover(options, store, startInstance, stop);
    const throughput = await measureThroughput(options, store, startInstance, stop, launcher.own);
    console.log(`  (c) cross-instance commit → subscriber latency, ${options.latencyCommits} commits per feed…`);
    const latency = await measureCrossInstanceLatency(store.uri, options.latencyCommits, 5);
    // The machine's load while it ran (1, 5, 15 min): the 2-core machine is often shared.
    const figures = {
      loadAverageAtEnd: loadavg().map(round2),
      failover,
      throughput,
      crossInstanceLatency: { commits: options.latencyCommits, gapMs: 5, results: latency },
    };
    return { figures, printed: print(options, failover, throughput, latency) };
  } finally {
    await launcher.stopAll();
  }
}

async function measureFailover(
  options: MultiOptions,
  store: StoreServer,
  startInstance: (db: string, label: string) => Promise<Instance>,
  stop: (instances: Instance[]) => Promise<void>,
) {
  const db = `bench_multi_${randomUUID().slice(0, 8)}`;
  const client = await MongoClient.connect(store.uri);
  const tasks = client.db(db).collection<Head>("tasks");
  const live = [await startInstance(db, "a"), await startInstance(db, "b")];
  const samples: Array<{ failoverMs: number; killed: string; takenBy: string | null | undefined }> = [];
  const budgetMs = options.leaseTtlMs + options.leaseHeartbeatMs + 15_000;
  console.log(
    `  (a) failover: ${options.failoverSamples} SIGKILLs of a running task's owner (LEASE_TTL_MS ${options.leaseTtlMs}, LEASE_HEARTBEAT_MS ${options.leaseHeartbeatMs})…`,
  );
  try {
    for (let i = 0; i < options.failoverSamples; i++) {
      const slot = i % 2;
      const owner = live[slot]!;
      // An hour-long node (the conformance-cancellable fixture): the task runs, holding its lease, until killed.
      const { runId } = (await rest(owner.url, "POST", "/v1/runs", { workflowId: "conformance-cancellable" })) as {
        runId: string;
      };
      const { head } = await waitForHead(
        tasks,
        runId,
        (h) => h.status === "running" && h.leaseOwner === owner.id && h.version >= 2,
        budgetMs,
      );
      // Kill at a random point of the heartbeat period, as a crash would.
      await sleep(Math.random() * options.leaseHeartbeatMs);
      const killedAt = wallNow();
      process.kill(owner.child.pid, "SIGKILL");
      const next = await waitForHead(tasks, runId, (h) => h.version > head.version, budgetMs);
      samples.push({ failoverMs: round2(next.at - killedAt), killed: owner.id, takenBy: next.head.leaseOwner });
      const survivor = live[1 - slot]!;
      await rest(survivor.url, "POST", `/v1/runs/${runId}/cancel`, { reason: "bench sample done" });
      await stop([owner]);
      live[slot] = await startInstance(db, slot === 0 ? "a" : "b");
    }
  } finally {
    await stop(live);
    await client.close();
    await dropDatabase(store.uri, db);
  }
  const sorted = samples.map((s) => s.failoverMs).sort((a, b) => a - b);
  return {
    leaseTtlMs: options.leaseTtlMs,
    leaseHeartbeatMs: options.leaseHeartbeatMs,
    targetMs: options.leaseTtlMs + 1000,
    p50Ms: round2(percentile(sorted, 50)),
    maxMs: sorted.at(-1) ?? Number.NaN,
    withinTarget: samples.filter((s) => s.failoverMs <= options.leaseTtlMs + 1000).length,
    samples,
  };
}

export async function measureThroughput(
  options: Pick<MultiOptions, "instanceCounts" | "concurrency" | "roundMs" | "warmupMs" | "rounds">,
  store: StoreServer,
  startInstance: (db: string, label: string) => Promise<Instance>,
  stop: (instances: Instance[]) => Promise<void>,
  own: (child: BenchChild) => void,
) {
  const load = await spawnChild("load generator", "bench/load/load-generator.ts");
  own(load);
  const rows = [];
  try {
    for (const n of options.instanceCounts) {
      console.log(
        `  (b) throughput with ${n} instance(s): warm-up, then ${options.rounds} rounds of ${options.roundMs} ms at concurrency ${options.concurrency}…`,
      );
      const db = `bench_multi_${randomUUID().slice(0, 8)}`;
      const instances: Instance[] = [];
      try {
        for (let i = 0; i < n; i++) instances.push(await startInstance(db, "t"));
        const spec = (durationMs: number): RoundSpec => ({
          baseUrl: instances[0]!.url,
          baseUrls: instances.map((i) => i.url),
          protocol: "jsonrpc",
          concurrency: options.concurrency,
          durationMs,
          skill: "echo",
          expectState: "completed",
        });
        await load.call<RoundResult>("round", spec(options.warmupMs));
        const tally = {
          count: 0,
          errors: 0,
          firstError: undefined as string | undefined,
          elapsedMs: 0,
          latenciesMs: [] as number[],
          cpuMs: 0,
          storeCpuMs: 0,
        };
        for (let r = 0; r < options.rounds; r++) {
          const before = await Promise.all(instances.map((i) => i.child.call<Usage>("stats")));
          const storeBefore = store.pid ? procCpuMs(store.pid) : 0;
          const result = await load.call<RoundResult>("round", spec(options.roundMs));
          const after = await Promise.all(instances.map((i) => i.child.call<Usage>("stats")));
          tally.storeCpuMs += store.pid ? procCpuMs(store.pid) - storeBefore : 0;
          tally.cpuMs += after.reduce((sum, u, i) => sum + u.cpuMs - before[i]!.cpuMs, 0);
          tally.count += result.count;
          tally.errors += result.errors;
          tally.firstError ??= result.firstError;
          tally.elapsedMs += result.elapsedMs;
          tally.latenciesMs.push(...result.latenciesMs);
        }
        rows.push({
          instances: n,
          requests: tally.count,
          errors: tally.errors,
          ...(tally.firstError ? { firstError: tally.firstError } : {}),
          reqPerSec: round2((tally.count / tally.elapsedMs) * 1000),
          ...latencySummary(tally.latenciesMs),
          serverCpuSecPer1kTasks: round2(tally.cpuMs / tally.count),
          storeServerCpuSecPer1kTasks: store.pid ? round2(tally.storeCpuMs / tally.count) : null,
        });
      } finally {
        await stop(instances);
        await dropDatabase(store.uri, db);
      }
    }
  } finally {
    await load.stop();
  }
  return { concurrency: options.concurrency, protocol: "jsonrpc 0.3", skill: "echo", rows };
}

function print(
  options: MultiOptions,
  failover: Awaited<ReturnType<typeof measureFailover>>,
  throughput: Awaited<ReturnType<typeof measureThroughput>>,
  latency: Awaited<ReturnType<typeof measureCrossInstanceLatency>>,
): string {
  return [
    `(a) failover, SIGKILL of the owner → the task's next commit by another instance (LEASE_TTL_MS ${failover.leaseTtlMs}, LEASE_HEARTBEAT_MS ${failover.leaseHeartbeatMs}, target ≤ ${failover.targetMs} ms)`,
    table(
      ["samples", "p50 ms", "max ms", "within target"],
      [
        [
          failover.samples.length,
          failover.p50Ms,
          failover.maxMs,
          `${failover.withinTarget}/${failover.samples.length}`,
        ],
      ],
    ),
    "",
    `(b) throughput, echo over JSON-RPC 0.3, concurrency ${options.concurrency}, round robin over the instances, one database.`,
    "    On this 2-core machine more instances show the overhead of several processes on one database, not scale.",
    table(
      ["instances", "req/s", "p50 ms", "p99 ms", "server CPU s/1k", "store CPU s/1k", "errors"],
      throughput.rows.map((r) => [
        r.instances,
        r.reqPerSec,
        r.p50Ms,
        r.p99Ms,
        r.serverCpuSecPer1kTasks,
        r.storeServerCpuSecPer1kTasks ?? Number.NaN,
        r.errors,
      ]),
    ),
    "",
    "(c) cross-instance commit → subscriber latency (two stores, two clients; bench/cross-instance-latency.ts)",
    table(
      ["feed", "p50 ms", "p99 ms", "max ms", "in order, once"],
      latency.map((r) => [
        r.feed === "poll" ? `poll (${r.pollMs} ms)` : r.feed,
        r.latencyMs.p50,
        r.latencyMs.p99,
        r.latencyMs.max,
        String(r.inOrderOnce),
      ]),
    ),
  ].join("\n");
}
