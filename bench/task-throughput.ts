/**
 * Benchmark: end-to-end blocking sends of the `echo` skill through the A2A service (no HTTP), and the
 * store's commit cost alone. Method and how to read the numbers: bench/README.md.
 *
 *   npx tsx bench/task-throughput.ts [memory|mongo] [tasks] [concurrency]
 */
import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import { createLogger } from "../src/observability/logger.js";
import { MemoryTaskStore } from "../src/store/memory-task-store.js";
import { MongoTaskStore } from "../src/store/mongo-task-store.js";
import type { TaskStore } from "../src/store/task-store.js";
import { startMongoWireServer } from "../test/support/mongo-wire-server/server.js";

const backend = (process.argv[2] ?? "memory") as "memory" | "mongo";
const tasks = Number(process.argv[3] ?? 500);
const concurrency = Number(process.argv[4] ?? 16);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function main(): Promise<void> {
  let store: TaskStore;
  let label: string;
  let cleanup = async () => {};
  if (backend === "mongo") {
    const uri = process.env["MONGODB_URI"];
    const wire = uri ? undefined : await startMongoWireServer({ port: 0 });
    const client = await MongoClient.connect(uri ?? wire!.uri);
    const db = `bench_${randomUUID().slice(0, 8)}`;
    const mongo = new MongoTaskStore(client, client.db(db));
    await mongo.init();
    store = mongo;
    label = uri ? "mongodb (MONGODB_URI)" : "mongodb driver → in-process wire-protocol test server";
    cleanup = async () => {
      await client.db(db).dropDatabase();
      await client.close();
      await wire?.close();
    };
  } else {
    store = new MemoryTaskStore();
    label = "memory";
  }
  const config = loadConfig({ PORT: "0", LOG_LEVEL: "silent", STORE: "memory", PUSH_ENABLED: "false" });
  const app = await createApp({ config, logger: createLogger("silent"), store, durableStore: backend === "mongo" });
  const ctx = { principal: { tenant: "default", id: "bench", scopes: "*" as const } };

  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < tasks) {
        next++;
        const t0 = performance.now();
        const task = await app.service.sendMessage({ message: { messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "bench" }] }, blocking: true }, ctx);
        if (task.status.state !== "completed") throw new Error(`task ended ${task.status.state}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  latencies.sort((a, b) => a - b);

  const result = {
    benchmark: "task-throughput",
    date: new Date().toISOString(),
    node: process.version,
    backend: label,
    tasks,
    concurrency,
    transitionsPerTask: 6,
    tasksPerSecond: Math.round((tasks / elapsedMs) * 1000),
    transitionsPerSecond: Math.round(((tasks * 6) / elapsedMs) * 1000),
    latencyMs: { p50: +percentile(latencies, 50).toFixed(2), p95: +percentile(latencies, 95).toFixed(2), p99: +percentile(latencies, 99).toFixed(2), max: +(latencies.at(-1) ?? 0).toFixed(2) },
  };
  console.log(JSON.stringify(result, null, 2));
  await writeFile(join(import.meta.dirname, "results", `task-throughput-${backend}.json`), JSON.stringify(result, null, 2) + "\n");
  await app.close();
  await cleanup();
}

await main();
