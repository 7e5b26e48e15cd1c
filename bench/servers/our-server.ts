// Our server for the bench, composed like src/main.ts from the same environment variables (STORE=memory, or
// MONGODB_URI + MONGODB_DB), in its own process. It adds only measurement: the parent reads its CPU and RSS
// over IPC, the MongoDB commands it sends (driver command monitoring, through connectMongoStore's opt-in
// hook), and, with BENCH_TRACE_COMMITS=1, when each store commit returned (for commit → subscriber latency).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createApp } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { connectMongoStore, openStore } from "../../src/store/open-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { serveIpc, wallNow } from "../lib/ipc.js";

const commands = new Map<string, number>();
const commitTimes = new Map<string, number[]>();

/** The store as the app sees it, with each commit's return time noted per task. */
function tracingCommits(store: TaskStore): TaskStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== "commit" || typeof value !== "function")
        return typeof value === "function" ? value.bind(target) : value;
      return async (...args: Parameters<TaskStore["commit"]>) => {
        await (value as TaskStore["commit"]).apply(target, args);
        const times = commitTimes.get(args[0]) ?? [];
        times.push(wallNow());
        commitTimes.set(args[0], times);
      };
    },
  });
}

// DATA_DIR holds the development keys (interrupt tokens, push secrets) generated at start: a fresh one per run.
const dataDir = await mkdtemp(join(tmpdir(), "openwop-bench-"));
// The scale and multi-instance benches drive the conformance-cancellable fixture next to the demos.
const env = { BUILTIN_WORKFLOWS: "demo,conformance", ...process.env, LOG_LEVEL: "silent", DATA_DIR: dataDir };
const config = loadConfig(env);
const logger = createLogger(config.logLevel);
const opened = config.store === "memory" ? await openStore(config, logger) : undefined;
// Driver command monitoring costs our server CPU (each command's events are built): off where the CPU is
// compared (`compare` counts the commands on the store server's side), on where the commands are the figure.
const countCommands = process.env["BENCH_COUNT_COMMANDS"] !== "0";
const mongo = opened
  ? undefined
  : await connectMongoStore(
      config.mongodbUri!,
      config.mongodbDb,
      config.taskStore,
      countCommands
        ? (event) => {
            // "update tasks", "find push_configs": the command and the collection it names.
            const name = `${event.commandName} ${String(event.command[event.commandName])}`;
            commands.set(name, (commands.get(name) ?? 0) + 1);
          }
        : undefined,
    );
const baseStore = opened?.store ?? mongo!.store;
const store = process.env["BENCH_TRACE_COMMITS"] === "1" ? tracingCommits(baseStore) : baseStore;
// HANDLERS_MODULE, as the CLI reads it (the noisy-neighbour bench's handlers); this process already runs under tsx.
const handlersModule = process.env["HANDLERS_MODULE"];
const handlers = handlersModule
  ? ((await import(pathToFileURL(handlersModule).href)) as { handlers: Record<string, TaskHandler> }).handlers
  : undefined;
const app = await createApp({
  config,
  logger,
  store,
  ...(handlers ? { handlers } : {}),
  durableStore: !opened,
  ...(opened
    ? { pushConfigs: opened.pushConfigs, idempotency: opened.idempotency }
    : { pushConfigs: mongo!.pushConfigs, idempotency: mongo!.idempotency }),
});
const startedAt = performance.now();
const address = await app.listen();

serveIpc(
  {
    storeCommands: () => Object.fromEntries(commands),
    commitTimes: (taskId: string) => commitTimes.get(taskId) ?? [],
  },
  { port: address.port, store: baseStore.kind, listenMs: Math.round(performance.now() - startedAt) },
);

process.on("SIGTERM", () => {
  void app
    .close()
    .then(() => baseStore.close())
    .then(() => rm(dataDir, { recursive: true, force: true }))
    .finally(() => process.exit(0));
});
