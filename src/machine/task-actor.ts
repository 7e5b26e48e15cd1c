import { createActor, type Actor } from "xstate";
import { DomainError } from "../domain/errors.js";
import type { RunStatus } from "../domain/run-status.js";
import { restorePersistedSnapshot } from "./persisted-task-snapshot.js";
import { taskMachine, type TaskMachineInput } from "./task-machine.js";
import type { TaskEvent } from "./task-events.js";
import { inspectorFor } from "./task-inspection.js";
import { runStatusOf, type TaskSnapshot } from "./task-projection.js";

export type TaskActor = Actor<typeof taskMachine>;

export function createTaskActor(input: TaskMachineInput): TaskActor {
  const inspect = inspectorFor(input.taskId);
  return createActor(taskMachine, { input, ...(inspect ? { inspect } : {}) }).start();
}

/**
 * Rehydrates a passivated task from its stored snapshot, through the machine-version check. The machine has
 * no side effects, so this is safe.
 */
export function restoreTaskActor(stored: unknown, taskId?: string): TaskActor {
  // `input` is only read when the machine starts fresh; a restored snapshot already holds the context.
  const input = undefined as unknown as TaskMachineInput;
  const snapshot = restorePersistedSnapshot(stored, taskId);
  const inspect = inspectorFor((snapshot as { context?: { taskId?: string } }).context?.taskId);
  return createActor(taskMachine, { snapshot, input, ...(inspect ? { inspect } : {}) }).start();
}

/**
 * Sends one event if the current state accepts it. An illegal event is refused with a DomainError and the
 * actor keeps its state (XState would silently ignore it; we want callers told).
 */
export function applyTaskEvent(actor: TaskActor, event: TaskEvent): { before: TaskSnapshot; after: TaskSnapshot } {
  const before = actor.getSnapshot();
  if (!before.can(event)) {
    const status: RunStatus = runStatusOf(before);
    throw new DomainError("unsupported-operation", `This operation is not supported while the task is ${status} (${event.type})`, {
      status,
      event: event.type,
    });
  }
  actor.send(event);
  return { before, after: actor.getSnapshot() };
}
