import { cliHelp } from "./cli/cli-help.js";
import { initProject, initSummary } from "./cli/init-project.js";
import type { CliCommand } from "./cli/cli-args.js";
import { formatKeys } from "./cli/keys-output.js";
import { startFailure } from "./cli/start-failure.js";
import { generateProductionKeys } from "./config/production-keys.js";
import { packageVersion } from "./domain/package-version.js";
import { createLogger } from "./observability/logger.js";

/**
 * The CLI's commands other than starting: help, version, a usage mistake, `check`, `init` and `keys`. Each
 * answers its exit code; none listens or opens the store.
 */
export async function runCommand(command: Exclude<CliCommand, { kind: "start" }>): Promise<number> {
  switch (command.kind) {
    case "help":
      process.stdout.write(cliHelp(packageVersion));
      return 0;
    case "version":
      process.stdout.write(`${packageVersion}\n`);
      return 0;
    case "usage":
      process.stderr.write(`openwop-a2a-host: ${command.problem}\nRun "openwop-a2a-host --help" for the commands.\n`);
      return 2;
    case "check":
      return check();
    case "keys":
      // Only the keys on stdout, so it can go straight to a file or `kubectl apply -f -`.
      process.stdout.write(formatKeys({ ...(await generateProductionKeys()) }, command.format));
      return 0;
    case "init": {
      const result = await initProject(command.dir);
      if (!result.ok) {
        process.stderr.write(`openwop-a2a-host init: ${result.problem}\n`);
        return 2;
      }
      process.stdout.write(initSummary(result, command.dir));
      return 0;
    }
  }
}

/** `check`: what a start reads and checks before it opens the store, all of it, then the verdict (exit 0 or 2). */
async function check(): Promise<number> {
  // Its own lines are the point of the command: at info whatever LOG_LEVEL says.
  const log = createLogger("info");
  try {
    const { settleHost } = await import("./start-host.js");
    const { catalog, handlers } = await settleHost({}, process.env, { pickPort: false, logger: log });
    const skills = catalog.ids();
    log.info(
      { event: "check.ok", skills, handlers: Object.keys(handlers).sort() },
      `configuration, handlers and workflows are valid: ${skills.length} skill${skills.length === 1 ? "" : "s"} (${skills.join(", ")})`,
    );
    return 0;
  } catch (err) {
    const failure = startFailure(err);
    log.fatal(failure.fields, failure.message);
    return failure.exitCode;
  }
}
