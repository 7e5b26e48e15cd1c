#!/usr/bin/env node
import { ConfigError } from "./config/config.js";
import { createLogger } from "./observability/logger.js";
import { exitAtShutdownDeadline } from "./shutdown-deadline.js";
import { startHost } from "./start-host.js";

// The CLI (`openwop-a2a-host`, `npm start`, the container): settings from the environment, your handlers from
// HANDLERS_MODULE. SIGTERM/SIGINT drain and exit 0; a configuration problem exits 2, any other failed start 1.
// Start-up failures are one JSON line, like every other log line, so log pipelines see why.
try {
  const host = await startHost();
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    exitAtShutdownDeadline(host.shutdown); // whatever hangs, the process ends (shutdown-deadline.ts)
    void host.close().then(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
} catch (err) {
  const fatal = createLogger("info");
  if (err instanceof ConfigError) {
    fatal.fatal({ event: "config.invalid", reason: err.message, problems: err.problems }, "configuration error");
    process.exit(2);
  }
  fatal.fatal({ event: "start.failed", reason: err instanceof Error ? err.message.split("\n")[0] : String(err) }, "openwop-a2a-host failed to start");
  process.exit(1);
}
