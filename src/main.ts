#!/usr/bin/env node
import { parseCliArgs } from "./cli/cli-args.js";
import { reportStartFailure } from "./cli/start-failure.js";
import { runCommand } from "./cli-commands.js";
import { exitAtShutdownDeadline } from "./shutdown-deadline.js";

// The CLI (`openwop-a2a-host`, `npm start`, the container): settings from the environment, your handlers from
// HANDLERS_MODULE. `--help`, `--version` and `check` never listen (cli-commands.ts). SIGTERM/SIGINT drain and
// exit 0; configuration, handler or workflow problems exit 2 (one `config.invalid` line listing them all), any
// other failed start 1. Start-up failures are one log line, like every other, so log pipelines see why.
const command = parseCliArgs(process.argv.slice(2));
if (command.kind !== "start") process.exit(await runCommand(command));
try {
  // Loaded only to start: --help and --version answer without loading the host.
  const { startHost, shutdownPlanOf } = await import("./start-host.js");
  const host = await startHost();
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    exitAtShutdownDeadline(shutdownPlanOf(host)); // whatever hangs, the process ends (shutdown-deadline.ts)
    void host.close().then(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
} catch (err) {
  process.exit(reportStartFailure(err));
}
