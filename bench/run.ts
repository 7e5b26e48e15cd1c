// `npm run bench -- [all|compare|scale|multi|peer-handoff|capacity|noisy-neighbour|limits] [--quick] [--name N] [size flags]`: see bench/README.md.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runCapacity } from "./capacity.js";
import { runCompare } from "./compare.js";
import { runMulti } from "./multi.js";
import { runNoisyNeighbour } from "./noisy-neighbour.js";
import { runPeerHandoff } from "./peer-handoff.js";
import { startStoreServer } from "./lib/store-server.js";
import { machine } from "./lib/summary.js";
import { runScale, SCALE_PARTS, type ScalePart } from "./scale.js";
import { runTenantLimits } from "./tenant-limits.js";

// The noisy-neighbour bench: phase length, B's rate (A sends ten times it), the node's wait, WORK_CONCURRENCY.
const NOISY_FULL = { seconds: 30, "b-rate": 10, "handler-ms": 200, "work-concurrency": 8 };
const NOISY_QUICK = { seconds: 4, "b-rate": 5, "handler-ms": 200, "work-concurrency": 8 };
const MULTI_FULL = { "failover-samples": 10, "lease-ttl-ms": 3000, "lease-heartbeat-ms": 750, "latency-commits": 200 };
const MULTI_QUICK = { "failover-samples": 3, "lease-ttl-ms": 3000, "lease-heartbeat-ms": 750, "latency-commits": 100 };
const FULL = {
  samples: 20,
  "round-ms": 5000,
  "warmup-ms": 2000,
  rounds: 3,
  concurrency: "1,32",
  waiting: 100_000,
  events: 5000,
  streams: 10_000,
  "latency-streams": 1000,
  triggers: 5,
  "storage-tasks": 500,
  ...MULTI_FULL,
  ...NOISY_FULL,
};
const QUICK = {
  samples: 5,
  "round-ms": 1500,
  "warmup-ms": 500,
  rounds: 2,
  concurrency: "1,32",
  waiting: 5000,
  events: 500,
  streams: 1000,
  "latency-streams": 200,
  triggers: 2,
  "storage-tasks": 100,
  ...MULTI_QUICK,
  ...NOISY_QUICK,
};

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    quick: { type: "boolean", default: false },
    parts: { type: "string", default: SCALE_PARTS.join(",") },
    instances: { type: "string", default: "1,2,4" },
    name: { type: "string" },
    ...Object.fromEntries(Object.keys(FULL).map((k) => [k, { type: "string" as const }])),
  },
});
const mode = positionals[0] ?? "all";
if (!["all", "compare", "scale", "multi", "peer-handoff", "capacity", "noisy-neighbour", "limits"].includes(mode)) {
  console.error(
    `unknown sub-command "${mode}": use all, compare, scale, multi, peer-handoff, capacity, noisy-neighbour or limits`,
  );
  process.exit(2);
}
const preset: Record<string, string | number> = values.quick ? QUICK : FULL;
const setting = (key: keyof typeof FULL): number => {
  const raw = (values as Record<string, unknown>)[key] ?? preset[key];
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${key} must be a positive whole number (got "${String(raw)}")`);
  return n;
};
const concurrencies = String((values as Record<string, unknown>)["concurrency"] ?? preset["concurrency"])
  .split(",")
  .map(Number);
if (concurrencies.some((c) => !Number.isInteger(c) || c < 1))
  throw new Error("--concurrency must be positive whole numbers, comma-separated");
const instanceCounts = values.instances.split(",").map(Number);
if (instanceCounts.some((n) => !Number.isInteger(n) || n < 1))
  throw new Error("--instances must be positive whole numbers, comma-separated");
const parts = values.parts.split(",") as ScalePart[];
if (parts.some((part) => !SCALE_PARTS.includes(part)))
  throw new Error(`--parts must be some of ${SCALE_PARTS.join(",")}, comma-separated`);
const name =
  values.name ??
  `${mode}-${values.quick ? "quick-" : ""}${new Date().toISOString().slice(0, 19).replace(/[:T]/g, "-")}`;

const startedAt = Date.now();
const store = await startStoreServer();
const result: Record<string, unknown> = {
  benchmark: "openwop-a2a-host side-by-side",
  date: new Date().toISOString(),
  machine: machine(),
  mode,
  quick: values.quick,
  store: store.description,
};
try {
  if (mode === "all" || mode === "compare") {
    const settings = {
      roundMs: setting("round-ms"),
      warmupMs: setting("warmup-ms"),
      rounds: setting("rounds"),
      concurrencies,
    };
    console.log(`compare: ${JSON.stringify(settings)}; store: ${store.description}`);
    const { rows, printed, referencePostgres } = await runCompare(settings, store);
    console.log(`\n${printed}\n`);
    result["compare"] = { settings, referencePostgres, rows };
  }
  if (mode === "all" || mode === "scale") {
    const settings = {
      parts,
      waiting: setting("waiting"),
      events: setting("events"),
      streams: setting("streams"),
      latencyStreams: setting("latency-streams"),
      triggers: setting("triggers"),
      roundMs: setting("round-ms"),
    };
    console.log(`scale: ${JSON.stringify(settings)}`);
    const { figures, printed } = await runScale(settings, store);
    console.log(`\n${printed}\n`);
    result["scale"] = { settings, figures };
  }
  if (mode === "all" || mode === "multi") {
    const settings = {
      failoverSamples: setting("failover-samples"),
      leaseTtlMs: setting("lease-ttl-ms"),
      leaseHeartbeatMs: setting("lease-heartbeat-ms"),
      roundMs: setting("round-ms"),
      warmupMs: setting("warmup-ms"),
      rounds: setting("rounds"),
      concurrency: 32,
      instanceCounts,
      latencyCommits: setting("latency-commits"),
    };
    console.log(`multi: ${JSON.stringify(settings)}`);
    const { figures, printed } = await runMulti(settings, store);
    console.log(`\n${printed}\n`);
    result["multi"] = { settings, figures };
  }
  if (mode === "all" || mode === "peer-handoff") {
    const settings = { samples: setting("samples"), pollMs: 1000 };
    console.log(`peer-handoff: ${JSON.stringify(settings)}`);
    const { figures, printed } = await runPeerHandoff(settings, store.uri);
    console.log(`\n${printed}\n`);
    result["peerHandoff"] = { settings, figures };
  }
  if (mode === "capacity") {
    const settings = {
      instanceCounts,
      roundMs: setting("round-ms"),
      warmupMs: setting("warmup-ms"),
      rounds: setting("rounds"),
      concurrency: 32,
      storageTasks: setting("storage-tasks"),
    };
    console.log(`capacity: ${JSON.stringify(settings)}`);
    const { figures, printed } = await runCapacity(settings, store);
    console.log(`\n${printed}\n`);
    result["capacity"] = { settings, figures };
  }
  if (mode === "all" || mode === "noisy-neighbour") {
    const settings = {
      seconds: setting("seconds"),
      bRate: setting("b-rate"),
      handlerMs: setting("handler-ms"),
      workConcurrency: setting("work-concurrency"),
    };
    console.log(`noisy-neighbour: ${JSON.stringify(settings)}`);
    const { figures, printed } = await runNoisyNeighbour(settings, store);
    console.log(`\n${printed}\n`);
    result["noisyNeighbour"] = { settings, figures };
  }
  if (mode === "limits") {
    // Not part of `all`: tenant limits are off by default, so the other figures never meet them.
    const settings = { seconds: values.quick ? 2 : 5, concurrency: 16, rate: 50, rateSeconds: values.quick ? 4 : 10 };
    console.log(`limits: ${JSON.stringify(settings)}`);
    const { figures, printed } = await runTenantLimits(settings, store);
    console.log(`\n${printed}\n`);
    result["limits"] = { settings, figures };
  }
} finally {
  await store.stop();
}
result["durationSec"] = Math.round((Date.now() - startedAt) / 1000);
const dir = join(import.meta.dirname, "results");
await mkdir(dir, { recursive: true });
const file = join(dir, `${name}.json`);
await writeFile(file, JSON.stringify(result, null, 2) + "\n");
console.log(`wrote ${file} (${result["durationSec"] as number} s)`);
