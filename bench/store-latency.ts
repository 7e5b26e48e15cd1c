// Does our CPU per task grow when the store answers more slowly? Our server on the wire-protocol test server,
// approval-gate creations (16 closed-loop callers, blocking, answered at input-required) in 5 s rounds, with
// the store's writes (bulkWrite, insert, update) held back by 0, 20 or 40 ms through the test server's
// `failCommand` fail point (blockConnection: a delay, no failure); interleaved 0, 20, 0, 20, 40 after a warm-up.
// It prints and writes our server's CPU per task and per second for each round (bench/results/store-latency-<date>.json).
// The scale figure (a) compares 0 against 100 000 waiting tasks; this separates the store's latency from that.
//   npx tsx bench/store-latency.ts
import { writeFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import type { RoundResult, RoundSpec } from "./load/load-generator.js";
import { spawnChild, type Usage } from "./lib/ipc.js";
import { dropDatabase, startStoreServer } from "./lib/store-server.js";
const store = await startStoreServer();
const db = `bench_lat_${randomUUID().slice(0, 8)}`;
const server = await spawnChild("our server", "bench/servers/our-server.ts", {
  env: { STORE: "mongodb", PORT: "0", MONGODB_URI: store.uri, MONGODB_DB: db },
});
const load = await spawnChild("load generator", "bench/load/load-generator.ts");
const admin = new MongoClient(store.uri, { directConnection: true });
const spec = (durationMs: number): RoundSpec => ({
  baseUrl: `http://127.0.0.1:${server.ready["port"] as number}`,
  protocol: "jsonrpc",
  concurrency: 16,
  durationMs,
  skill: "approval-gate",
  expectState: "input-required",
});
const rounds: Array<Record<string, unknown>> = [];
const measure = async (label: string) => {
  const before = await server.call<Usage>("stats");
  const r = await load.call<RoundResult>("round", spec(5000));
  const after = await server.call<Usage>("stats");
  const row = {
    label,
    tasksPerSec: Math.round((r.count / r.elapsedMs) * 1000),
    errors: r.errors,
    ourCpuMsPerTask: Math.round(((after.cpuMs - before.cpuMs) / r.count) * 1000) / 1000,
    ourCpuMsPerSec: Math.round((after.cpuMs - before.cpuMs) / (r.elapsedMs / 1000)),
  };
  rounds.push(row);
  console.log(JSON.stringify(row));
};
const block = (ms: number) =>
  admin.db("admin").command(
    ms > 0
      ? {
          configureFailPoint: "failCommand",
          mode: "alwaysOn",
          data: { failCommands: ["bulkWrite", "insert", "update"], blockConnection: true, blockTimeMS: ms },
        }
      : { configureFailPoint: "failCommand", mode: "off" },
  );
await load.call<RoundResult>("round", spec(2000));
for (const ms of [0, 20, 0, 20, 40]) {
  await block(ms);
  await measure(`store writes +${ms} ms`);
}
await block(0);
const file = `bench/results/store-latency-${new Date().toISOString().slice(0, 10)}.json`;
writeFileSync(
  file,
  JSON.stringify(
    {
      benchmark: "our CPU per task against the store's write latency",
      store: store.description,
      node: process.version,
      rounds,
    },
    null,
    2,
  ) + "\n",
);
console.log(`wrote ${file}`);
await admin.close();
await load.stop();
await server.stop();
await dropDatabase(store.uri, db).catch(() => {});
await store.stop();
