import { loadConfig, type Config } from "../../src/config/config.js";
import { createCore, type Core } from "../../src/core.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { createLogger } from "../../src/observability/logger.js";
import { createTelemetry } from "../../src/observability/telemetry.js";
import { hostInterfaces } from "../../src/transport/interface-urls.js";
import type { IdempotencyStore } from "../../src/store/idempotency-store.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { PushConfigStore } from "../../src/store/push-config-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import { TEST_BUILTIN_WORKFLOWS } from "./server-process.js";

export interface TestCore {
  core: Core;
  store: TaskStore;
  config: Config;
  close(): Promise<void>;
}

/** The host without HTTP (engine and services), started, on an in-memory store unless one is given. */
export async function startTestCore(
  env: Record<string, string> = {},
  options: {
    store?: TaskStore;
    handlers?: Record<string, TaskHandler>;
    idempotency?: IdempotencyStore;
    pushConfigs?: PushConfigStore;
  } = {},
): Promise<TestCore> {
  const store = options.store ?? new MemoryTaskStore();
  const config = loadConfig({
    LOG_LEVEL: "silent",
    TIMER_POLL_MS: "50",
    BUILTIN_WORKFLOWS: TEST_BUILTIN_WORKFLOWS,
    ...env,
  });
  const logger = createLogger(config.logLevel);
  // Made here, so shut down here (core only uses it).
  const telemetry = await createTelemetry();
  const core = await createCore({
    config,
    logger,
    telemetry,
    interfaces: hostInterfaces(config.publicUrl),
    store,
    ...(options.handlers ? { handlers: options.handlers } : {}),
    ...(options.idempotency ? { idempotency: options.idempotency } : {}),
    ...(options.pushConfigs ? { pushConfigs: options.pushConfigs } : {}),
  });
  await core.start();
  return {
    core,
    store,
    config,
    async close() {
      await core.stop();
      await telemetry.shutdown();
    },
  };
}
