// Drives blocking echo sends through the TaskService on createCore with the in-memory store, for
// `node --cpu-prof --import tsx scripts/profile-echo-loop.ts [tasks] [concurrency]`. Not a benchmark (see bench/):
// a fixed workload to find what the engine spends its time on.
import { randomUUID } from "node:crypto";
import { loadConfig } from "../src/config/config.js";
import { createCore } from "../src/core.js";
import { createLogger } from "../src/observability/logger.js";
import { createTelemetry } from "../src/observability/telemetry.js";
import { hostInterfaces } from "../src/transport/interface-urls.js";
import { MemoryTaskStore } from "../src/store/memory-task-store.js";

const total = Number(process.argv[2] ?? 20_000);
const concurrency = Number(process.argv[3] ?? 32);
const config = loadConfig({ LOG_LEVEL: "silent", PUSH_ENABLED: "false" });
const telemetry = await createTelemetry();
const core = await createCore({
  config,
  logger: createLogger(config.logLevel),
  telemetry,
  interfaces: hostInterfaces(config.publicUrl),
  store: new MemoryTaskStore(),
});
await core.start();
const ctx = { principal: { tenant: "default", id: "bench", scopes: "*" as const } };
const send = () =>
  core.service.sendMessage(
    { message: { messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "hello" }] }, blocking: true },
    ctx,
  );

for (let i = 0; i < 500; i++) await send(); // warm up
let issued = 0;
const cpuBefore = process.cpuUsage();
const started = process.hrtime.bigint();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (issued < total) {
      issued++;
      const task = await send();
      if (task.status.state !== "completed") throw new Error(`task ended ${task.status.state}`);
    }
  }),
);
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const cpu = process.cpuUsage(cpuBefore);
// CPU time per task is what counts on a shared machine; wall-clock throughput moves with the neighbours' load.
const cpuMsPerTask = (cpu.user + cpu.system) / 1000 / total;
console.log(
  JSON.stringify({
    tasks: total,
    concurrency,
    seconds: +seconds.toFixed(3),
    perSecond: Math.round(total / seconds),
    cpuMsPerTask: +cpuMsPerTask.toFixed(4),
  }),
);
await core.stop();
await telemetry.shutdown();
