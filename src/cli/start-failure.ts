import { ConfigError } from "../domain/env-settings.js";
import { WorkflowLoadError } from "../engine/workflow-load-error.js";
import { createLogger } from "../observability/logger.js";

/** How the CLI reports a failed start (or check): the exit code and the fields of its one log line. */
export interface StartFailure {
  exitCode: 1 | 2;
  fields:
    | { event: "config.invalid"; reason: string; problems: readonly string[] }
    | { event: "start.failed"; reason: string };
  message: string;
}

/**
 * Settings, handlers and workflows the user can fix: exit 2 and every problem in full (`problems`, one entry
 * each). Anything else (the store unreachable, the port taken): exit 1 and the error's first line.
 */
export function startFailure(err: unknown): StartFailure {
  if (err instanceof ConfigError || err instanceof WorkflowLoadError) {
    return {
      exitCode: 2,
      fields: { event: "config.invalid", reason: err.message, problems: err.problems },
      message: err instanceof ConfigError ? "configuration error" : "workflow error",
    };
  }
  return {
    exitCode: 1,
    fields: { event: "start.failed", reason: err instanceof Error ? err.message.split("\n")[0]! : String(err) },
    message: "openwop-a2a-host failed to start",
  };
}

/**
 * A failed `startHost` reported as the CLI reports it: one log line on stdout (`config.invalid` with every problem,
 * or `start.failed`), no stack trace. Answers the exit code (2 for problems to fix, else 1). For a program of your
 * own that starts the host: `await startHost(…).catch((err) => process.exit(reportStartFailure(err)))`.
 */
export function reportStartFailure(err: unknown): 1 | 2 {
  const failure = startFailure(err);
  createLogger("info").fatal(failure.fields, failure.message);
  return failure.exitCode;
}
