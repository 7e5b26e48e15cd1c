// A focused run for profiling the request path: one of our servers (in-memory store or MongoDB), one binding,
// one concurrency, a warm-up and one measured round; prints our server's CPU per task. With --prof DIR the
// server runs under `--cpu-prof` and writes its profile into DIR when it stops (open it in Chrome DevTools).
//   npx tsx bench/profile-hotpath.ts [memory|mongodb] [jsonrpc|rest|grpc] [concurrency=32] [seconds=10] [--prof DIR]
import { randomUUID } from "node:crypto";
import type { RoundResult, RoundSpec } from "./load/load-generator.js";
import type { Protocol } from "./load/protocols.js";
import { spawnChild, type BenchChild, type Usage } from "./lib/ipc.js";
import { dropDatabase, startStoreServer, type StoreServer } from "./lib/store-server.js";

const args = process.argv.slice(2);
const profIndex = args.indexOf("--prof");
const profDir = profIndex >= 0 ? args.splice(profIndex, 2)[1] : undefined;
const [storeKind = "memory", protocol = "jsonrpc", concurrency = "32", seconds = "10"] = args;

let store: StoreServer | undefined;
const children: BenchChild[] = [];
const db = `bench_prof_${randomUUID().slice(0, 8)}`;
try {
  // No driver command monitoring: it costs the server CPU, and this script does not count commands.
  const env: Record<string, string> = { STORE: storeKind, PORT: "0", BENCH_COUNT_COMMANDS: "0" };
  if (storeKind === "mongodb") {
    store = await startStoreServer();
    Object.assign(env, { MONGODB_URI: store.uri, MONGODB_DB: db });
  }
  const nodeArgs = profDir ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [];
  const server = await spawnChild("our server", "bench/servers/our-server.ts", { env, nodeArgs });
  children.push(server);
  const load = await spawnChild("load generator", "bench/load/load-generator.ts");
  children.push(load);
  const spec = (durationMs: number): RoundSpec => ({
    baseUrl: `http://127.0.0.1:${server.ready["port"] as number}`,
    protocol: protocol as Protocol,
    concurrency: Number(concurrency),
    durationMs,
    skill: "echo",
    expectState: "completed",
  });
  await load.call<RoundResult>("round", spec(2000));
  const before = await server.call<Usage>("stats");
  const result = await load.call<RoundResult>("round", spec(Number(seconds) * 1000));
  const after = await server.call<Usage>("stats");
  const cpuMsPerTask = (after.cpuMs - before.cpuMs) / result.count;
  console.log(
    JSON.stringify({
      store: storeKind,
      protocol,
      concurrency: Number(concurrency),
      tasks: result.count,
      errors: result.errors,
      firstError: result.firstError,
      reqPerSec: Math.round((result.count / result.elapsedMs) * 1000),
      cpuMsPerTask: Math.round(cpuMsPerTask * 1000) / 1000,
    }),
  );
} finally {
  for (const child of children.reverse()) await child.stop();
  if (store) {
    await dropDatabase(store.uri, db).catch(() => {});
    await store.stop();
  }
}
