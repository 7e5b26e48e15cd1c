/**
 * The operator tools: the web console at /console (CONSOLE_ENABLED) and XState live inspection of chosen
 * tasks (XSTATE_INSPECT, XSTATE_INSPECT_FILE). Returns an error message instead of throwing so config.ts
 * keeps one error type.
 */
export interface OperatorSettings {
  /** Serve /console (on by default outside production; production only with CONSOLE_ENABLED=true). */
  console: boolean;
  /** Task ids whose actors report to the inspector ("*" = every task); undefined = inspection off. */
  inspectTasks?: readonly string[] | "*";
  /** Where inspection events go: a file of JSON lines, or "-" for standard error. */
  inspectSink: string;
}

export function loadOperatorSettings(env: Record<string, string | undefined>, production: boolean): OperatorSettings | string {
  const raw = env["CONSOLE_ENABLED"]?.trim().toLowerCase();
  if (raw !== undefined && raw !== "" && raw !== "true" && raw !== "false") return `CONSOLE_ENABLED must be true or false (got "${env["CONSOLE_ENABLED"]}")`;
  const consoleEnabled = raw === undefined || raw === "" ? !production : raw === "true";
  const inspect = env["XSTATE_INSPECT"]?.trim();
  const inspectTasks = !inspect ? undefined : inspect === "*" ? "*" : inspect.split(",").map((id) => id.trim()).filter(Boolean);
  if (inspectTasks !== undefined && inspectTasks !== "*" && inspectTasks.length === 0) return 'XSTATE_INSPECT must be "*" or a comma-separated list of task ids';
  return { console: consoleEnabled, ...(inspectTasks !== undefined ? { inspectTasks } : {}), inspectSink: env["XSTATE_INSPECT_FILE"]?.trim() || "-" };
}
