import type { InspectionEvent } from "xstate";

/** One inspection record: what XState's inspection API said about a task actor, reduced to plain JSON. */
export interface TaskInspectionRecord {
  taskId: string;
  /** `@xstate.event` (an event reached the actor), `@xstate.snapshot` (the state after it), `@xstate.actor` (created). */
  type: InspectionEvent["type"];
  event?: unknown;
  state?: unknown;
  status?: string;
  at: string;
}

export interface TaskInspectionOptions {
  /** Task ids to inspect, or "*" for every task. */
  taskIds: readonly string[] | "*";
  sink: (record: TaskInspectionRecord) => void;
}

/**
 * Developer inspection (XSTATE_INSPECT): process-wide, set once by the composition root before any actor
 * is created, because actors are created deep inside the supervisor and only the chosen tasks report.
 */
let inspection: TaskInspectionOptions | undefined;

export function configureTaskInspection(options: TaskInspectionOptions | undefined): void {
  inspection = options;
}

/** The `inspect` option for the actor of `taskId`, or undefined when that task is not inspected. */
export function inspectorFor(taskId: string | undefined): ((event: InspectionEvent) => void) | undefined {
  const current = inspection;
  if (!current || !taskId || (current.taskIds !== "*" && !current.taskIds.includes(taskId))) return undefined;
  return (event) => {
    if (event.type !== "@xstate.event" && event.type !== "@xstate.snapshot" && event.type !== "@xstate.actor") return;
    const at = new Date().toISOString();
    if (event.type === "@xstate.event") current.sink({ taskId, type: event.type, event: event.event, at });
    else if (event.type === "@xstate.snapshot") {
      const snapshot = event.snapshot as { value?: unknown; status?: string };
      current.sink({
        taskId,
        type: event.type,
        event: event.event,
        state: snapshot.value,
        ...(snapshot.status ? { status: snapshot.status } : {}),
        at,
      });
    } else current.sink({ taskId, type: event.type, at });
  };
}
