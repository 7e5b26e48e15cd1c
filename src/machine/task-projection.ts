import type { SnapshotFrom } from "xstate";
import type { RunStatus } from "../domain/run-status.js";
import { RUN_STATUSES } from "../domain/run-status.js";
import { taskMachine, type TaskStateMeta } from "./task-machine.js";

export type TaskSnapshot = SnapshotFrom<typeof taskMachine>;

export function runStatusOf(snapshot: TaskSnapshot): RunStatus {
  const value = snapshot.value;
  if (typeof value !== "string" || !(RUN_STATUSES as readonly string[]).includes(value)) {
    throw new Error(`task machine is in an unexpected state: ${JSON.stringify(value)}`);
  }
  return value as RunStatus;
}

/**
 * Reads the A2A projection declared on the active state's `meta`. The machine is flat, so that is the meta
 * of the state named by the snapshot's value (looked up directly: `snapshot.getMeta()` builds a new object
 * of every active node's meta, several times per transition).
 */
export function stateMetaOf(snapshot: TaskSnapshot): TaskStateMeta {
  return declaredMetaOf(runStatusOf(snapshot));
}

/** The meta of a state by name, without a snapshot (used by tests and the visualizer export). */
export function declaredMetaOf(status: RunStatus): TaskStateMeta {
  const node = taskMachine.states[status];
  if (!node?.meta) throw new Error(`state ${status} declares no A2A projection`);
  return node.meta as TaskStateMeta;
}
