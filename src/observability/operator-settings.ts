import type { EnvReader } from "../domain/env-settings.js";

/**
 * The operator tools: the web console at /console (CONSOLE_ENABLED) and XState live inspection of chosen
 * tasks (XSTATE_INSPECT, XSTATE_INSPECT_FILE). Problems go to the reader, so one start reports them all.
 */
export interface OperatorSettings {
  /** Serve /console (on by default outside production; production only with CONSOLE_ENABLED=true). */
  console: boolean;
  /** Task ids whose actors report to the inspector ("*" = every task); undefined = inspection off. */
  inspectTasks?: readonly string[] | "*";
  /** Where inspection events go: a file of JSON lines, or "-" for standard error. */
  inspectSink: string;
}

export function readOperatorSettings(env: EnvReader, production: boolean): OperatorSettings {
  const consoleEnabled = env.bool("CONSOLE_ENABLED", !production);
  const inspect = env.raw("XSTATE_INSPECT")?.trim();
  const inspectTasks = !inspect
    ? undefined
    : inspect === "*"
      ? "*"
      : inspect
          .split(",")
          .map((id) => id.trim())
          .filter(Boolean);
  if (inspectTasks !== undefined && inspectTasks !== "*" && inspectTasks.length === 0)
    env.problem('XSTATE_INSPECT must be "*" or a comma-separated list of task ids');
  return {
    console: consoleEnabled,
    ...(inspectTasks !== undefined ? { inspectTasks } : {}),
    inspectSink: env.raw("XSTATE_INSPECT_FILE")?.trim() || "-",
  };
}
