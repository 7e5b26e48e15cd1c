import { createApp } from "./app.js";
import { ConfigError, loadConfig } from "./config/config.js";
import { createLogger } from "./observability/logger.js";
import { openStore } from "./store/open-store.js";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`openwop-a2a-host: configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const opened = await openStore(config, logger);
  const app = await createApp({ config, logger, store: opened.store, durableStore: opened.durable, pushConfigs: opened.pushConfigs, idempotency: opened.idempotency });
  const address = await app.listen();
  logger.info(
    { port: address.port, host: address.address, env: config.env, store: opened.store.kind },
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
    logger.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

main().catch((err: unknown) => {
  console.error("openwop-a2a-host failed to start:", err instanceof Error ? err.message : err);
  process.exit(1);
});
