import { createActor, type ActorScope } from "xstate";
import { DomainError } from "../domain/errors.js";
import type { RunStatus } from "../domain/run-status.js";
import { restorePersistedSnapshot } from "./persisted-task-snapshot.js";
import { taskMachine, type TaskMachineInput } from "./task-machine.js";
import type { TaskEvent } from "./task-events.js";
import { runStatusOf, type TaskSnapshot } from "./task-projection.js";

/**
 * A task's machine state held in memory: the current snapshot, advanced by the machine's own pure
 * transition function. No XState actor runs per task: the machine has no side effects, delayed events or
 * children, so an actor (mailbox, observers, system registration) would only cost time on every request.
 */
export interface TaskActor {
  getSnapshot(): TaskSnapshot;
}

class TaskState implements TaskActor {
  constructor(public snapshot: TaskSnapshot) {}
  getSnapshot(): TaskSnapshot {
    return this.snapshot;
  }
}

/**
 * The scope the machine's transitions run in, made once. XState's `transition()` helper builds a new actor
 * for every call (and our context factory throws without input); the machine needs the scope only for
 * actions it would execute, and all of ours are `assign`s, resolved inside the transition.
 */
const scope: ActorScope<TaskSnapshot, TaskEvent> = (() => {
  const self = createActor(taskMachine, { input: { taskId: "", contextId: "", workflowId: "", tenant: "", firstNode: null, message: { messageId: "", role: "user", parts: [] } } });
  return {
    self,
    id: "",
    sessionId: "",
    system: self.system,
    defer: () => {},
    logger: () => {},
    emit: () => {},
    stopChild: () => {},
    actionExecutor: () => {},
  } as unknown as ActorScope<TaskSnapshot, TaskEvent>;
})();

export function createTaskActor(input: TaskMachineInput): TaskActor {
  return new TaskState(taskMachine.getInitialSnapshot(scope as never, input));
}

/** Rehydrates a passivated task from its stored snapshot, through the machine-version check. */
export function restoreTaskActor(stored: unknown, taskId?: string): TaskActor {
  return new TaskState(taskMachine.restoreSnapshot(restorePersistedSnapshot(stored, taskId) as never, scope as never) as TaskSnapshot);
}

/**
 * Applies one event if the current state accepts it. An illegal event is refused with a DomainError and the
 * task keeps its state (XState would silently ignore it; we want callers told).
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
  const after = taskMachine.transition(before, event, scope as never);
  (actor as TaskState).snapshot = after;
  return { before, after };
}

