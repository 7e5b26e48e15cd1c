import { DomainError } from "../domain/errors.js";
import { isTerminalRunStatus, type RunStatus } from "../domain/run-status.js";

/** OpenWOP's two refusals: `run_terminal` for a finished run, `run_state_conflict` (with the status) otherwise. */
export function stateError(taskId: string, status: RunStatus, why: string, verb: string): DomainError {
  // A failed task can still be retried or restarted: for those, failed is a state, not the end.
  const terminal =
    isTerminalRunStatus(status) && !(status === "failed" && (verb === "retried" || verb === "restarted"));
  return new DomainError(terminal ? "run-terminal" : "run-state-conflict", `task ${taskId} cannot be ${verb}: ${why}`, {
    runId: taskId,
    runStatus: status,
  });
}
