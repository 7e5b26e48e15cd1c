import type { RunStatus } from "../domain/run-status.js";
import type { RunEvent } from "../domain/task-record.js";

/** The event-log entries that mark entering a machine state (the run status of the same name). */
const ENTERS: Record<string, RunStatus> = {
  "run.created": "pending",
  "run.started": "running",
  "node.resumed": "running",
  "run.paused": "paused",
  "run.resumed": "running",
  "openwop-a2a-host.run.retried": "running",
  "openwop-a2a-host.run.restarted": "running",
  "openwop-a2a-host.run.moved": "running",
  "run.cancelling": "cancelling",
  "run.cancelled": "cancelled",
  "run.completed": "completed",
  "run.failed": "failed",
};

const WAITING: Record<string, RunStatus> = {
  approval: "waiting-approval",
  clarification: "waiting-input",
  "external-event": "waiting-external",
};

/**
 * The machine states a task went through, read from its event log (the log is the history; snapshots keep
 * only the present). Consecutive repeats collapse, so each pair is one transition the diagram can mark.
 */
export function statePathOf(events: readonly Pick<RunEvent, "type" | "payload">[]): RunStatus[] {
  const path: RunStatus[] = [];
  for (const event of events) {
    const state =
      event.type === "interrupt.requested"
        ? WAITING[String(event.payload["kind"])]
        : (event.type === "run.resumed" ||
              event.type === "openwop-a2a-host.run.restarted" ||
              event.type === "openwop-a2a-host.run.moved") &&
            typeof event.payload["toStatus"] === "string"
          ? (event.payload["toStatus"] as RunStatus) // back where it was paused (a gate, running), or still paused
          : ENTERS[event.type];
    if (state && path.at(-1) !== state) path.push(state);
  }
  return path;
}
