import { createApp } from "./app.js";
import { ConfigError, loadConfig } from "./config/config.js";
import type { TaskHandler } from "./engine/workflow-types.js";
import { createLogger } from "./observability/logger.js";
import { createTelemetry } from "./observability/telemetry.js";
import { openStore } from "./store/open-store.js";

export interface HostProcessOptions {
  /**
   * Task handlers beyond the built-in ones, for the workflows under WORKFLOWS_DIR: an embedding process
   * (`main.ts` passes none) registers its own, e.g. a handler with an effect outside the host.
   */
  handlers?: Record<string, TaskHandler>;
}

/** The host as a process: configuration from the environment, store, app, listen; SIGTERM/SIGINT shut it down. */
export async function runHostProcess(options: HostProcessOptions = {}): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      // One JSON line, like every other log line, so log pipelines see why the start failed.
      createLogger("info").fatal({ event: "config.invalid", reason: err.message, problems: err.problems }, "configuration error");
      process.exit(2);
    }
    throw err;
  }
  // Every line names the instance: with several instances on one database, the task lease owner it is.
  const logger = createLogger(config.logLevel).child({ instanceId: config.leases.instanceId });
  const opened = await openStore(config, logger);
  // OTEL_EXPORTER_OTLP_ENDPOINT (and the other standard OTEL_* variables) turn on OTLP export; /metrics is always served.
  const telemetry = await createTelemetry({ env: process.env });
  const app = await createApp({ config, logger, store: opened.store, durableStore: opened.durable, pushConfigs: opened.pushConfigs, idempotency: opened.idempotency, telemetry, ...(options.handlers ? { handlers: options.handlers } : {}) });
  const address = await app.listen();
  logger.info(
    { port: address.port, host: address.address, env: config.env, store: opened.store.kind, startupMs: Math.round(process.uptime() * 1000) },
    `openwop-a2a-host listening on ${config.publicUrl} (HTTP/1.1 + h2c) — A2A JSON-RPC, gRPC, Connect, gRPC-Web, HTTP+JSON, OpenWOP REST; ` +
      `store: ${opened.description}; auth: ${config.auth.mode === "apikey" ? `API keys (${config.auth.keys.length})` : "off (dev: every caller is the default tenant)"}; ${app.push.description}`,
  );

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down: draining requests and ending streams");
    await app.close();
    await opened.stop();
    await telemetry.shutdown();
    logger.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

/** Runs the host and turns a failed start into one fatal log line and exit code 1. */
export function startHostProcess(options: HostProcessOptions = {}): void {
  runHostProcess(options).catch((err: unknown) => {
    createLogger("info").fatal({ event: "start.failed", reason: err instanceof Error ? err.message.split("\n")[0] : String(err) }, "openwop-a2a-host failed to start");
    process.exit(1);
  });
}
