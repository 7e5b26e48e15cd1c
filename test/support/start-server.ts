import { createApp, type App, type AppOptions } from "../../src/app.js";
import { loadConfig, type Config } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { freePort, TEST_BUILTIN_WORKFLOWS } from "./server-process.js";

export interface TestApp {
  baseUrl: string;
  port: number;
  app: App;
  store: TaskStore;
  config: Config;
  close(): Promise<void>;
}

/** The real app, in this process, on a free loopback port (in-memory store unless one is given). */
export async function startTestApp(
  env: Record<string, string> = {},
  store: TaskStore = new MemoryTaskStore(),
  handlers?: Record<string, TaskHandler>,
  /**
   * More of createApp's options: e.g. `nodeKinds` (a kind defined in the test) and `workflows` using it; `logs`
   * collects the JSON log lines (at the env's LOG_LEVEL).
   */
  { logs, ...more }: Pick<AppOptions, "nodeKinds" | "workflows" | "hostEvents"> & { logs?: string[] } = {},
): Promise<TestApp> {
  const port = await freePort();
  // With TLS_CERT_FILE the port speaks TLS: the card and the tests' clients use https.
  const scheme = env["TLS_CERT_FILE"] ? "https" : "http";
  // Tests may use every built-in workflow (demos and conformance fixtures) next to their WORKFLOWS_DIR, unless they set BUILTIN_WORKFLOWS.
  const config = loadConfig({
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: `${scheme}://127.0.0.1:${port}`,
    LOG_LEVEL: "silent",
    TIMER_POLL_MS: "50",
    SHUTDOWN_GRACE_MS: "1000",
    BUILTIN_WORKFLOWS: TEST_BUILTIN_WORKFLOWS,
    ...env,
  });
  const logger = createLogger(config.logLevel, logs ? { write: (line: string) => void logs.push(line) } : undefined);
  const app = await createApp({
    config,
    logger,
    store,
    durableStore: store.kind === "mongodb",
    ...(handlers ? { handlers } : {}),
    ...more,
  });
  await app.listen();
  return {
    baseUrl: `${scheme}://127.0.0.1:${port}`,
    port,
    app,
    store,
    config,
    async close() {
      await app.close();
    },
  };
}

/** Workflows only the tests use (e.g. `slow-approval`); pass as `WORKFLOWS_DIR`. */
export const TEST_WORKFLOWS_DIR = new URL("../fixtures/workflows", import.meta.url).pathname;
