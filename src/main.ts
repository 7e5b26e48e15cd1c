import { createApp } from "./app.js";
import { ConfigError, loadConfig } from "./config/config.js";
import { createLogger } from "./observability/logger.js";
import { createTelemetry } from "./observability/telemetry.js";
import { openStore } from "./store/open-store.js";

async function main(): Promise<void> {
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
  const logger = createLogger(config.logLevel);
  const opened = await openStore(config, logger);
  // OTEL_EXPORTER_OTLP_ENDPOINT (and the other standard OTEL_* variables) turn on OTLP export; /metrics is always served.
  const telemetry = await createTelemetry({ env: process.env });
  const app = await createApp({ config, logger, store: opened.store, durableStore: opened.durable, pushConfigs: opened.pushConfigs, idempotency: opened.idempotency, telemetry });
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

main().catch((err: unknown) => {
  createLogger("info").fatal({ event: "start.failed", reason: err instanceof Error ? err.message.split("\n")[0] : String(err) }, "openwop-a2a-host failed to start");
  process.exit(1);
});
