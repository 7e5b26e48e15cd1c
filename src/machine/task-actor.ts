import { createActor, type Actor, type ActorScope } from "xstate";
import { DomainError } from "../domain/errors.js";
import type { RunStatus } from "../domain/run-status.js";
import { restorePersistedSnapshot } from "./persisted-task-snapshot.js";
import { initialContext, taskMachine, type TaskMachineInput } from "./task-machine.js";
import type { TaskEvent } from "./task-events.js";
import { inspectorFor } from "./task-inspection.js";
import { runStatusOf, type TaskSnapshot } from "./task-projection.js";

/**
 * A task's machine state held in memory: the current snapshot, advanced by the machine's own pure
 * transition function. No XState actor runs per task: the machine has no side effects, delayed events or
 * children, so an actor (mailbox, observers, system registration) would only cost time on every request.
 */
export interface TaskActor {
  getSnapshot(): TaskSnapshot;
  /** Moves to the state after `event` and returns it (the same snapshot when the state does not take it). */
  advance(event: TaskEvent): TaskSnapshot;
}

class TaskState implements TaskActor {
  constructor(private snapshot: TaskSnapshot) {}
  getSnapshot(): TaskSnapshot {
    return this.snapshot;
  }
  advance(event: TaskEvent): TaskSnapshot {
    return (this.snapshot = taskMachine.transition(this.snapshot, event, scope as never));
  }
}

/**
 * A task chosen for live inspection (XSTATE_INSPECT) runs in a real XState actor, so XState's inspection API
 * reports its events and snapshots; every other task takes the cheaper path above.
 */
class InspectedTask implements TaskActor {
  constructor(private readonly actor: Actor<typeof taskMachine>) {}
  getSnapshot(): TaskSnapshot {
    return this.actor.getSnapshot();
  }
  advance(event: TaskEvent): TaskSnapshot {
    // An event the state does not take is not sent: the inspector sees only what the task did.
    if (this.actor.getSnapshot().can(event)) this.actor.send(event);
    return this.actor.getSnapshot();
  }
}

/**
 * The scope the machine's transitions run in, made once. XState's `transition()` helper builds a new actor
 * for every call (and our context factory throws without input); the machine needs the scope only for
 * actions it would execute, and all of ours are `assign`s, resolved inside the transition.
 */
const scope: ActorScope<TaskSnapshot, TaskEvent> = (() => {
  const self = createActor(taskMachine, {
    input: {
      taskId: "",
      contextId: "",
      workflowId: "",
      tenant: "",
      firstNode: null,
      message: { messageId: "", role: "user", parts: [] },
    },
  });
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
  const inspect = inspectorFor(input.taskId);
  if (inspect) return new InspectedTask(createActor(taskMachine, { input, inspect }).start());
  // The initial state has no entry actions, so its snapshot is the state and the context, resolved directly
  // (a fifth of the cost of XState's initial macrostep; a unit test checks both give the same snapshot).
  return new TaskState(taskMachine.resolveState({ value: "pending", context: initialContext(input) }));
}

/** Rehydrates a passivated task from its stored snapshot, through the machine-version check. */
export function restoreTaskActor(stored: unknown, taskId?: string): TaskActor {
  const persisted = restorePersistedSnapshot(stored, taskId);
  const inspect = inspectorFor(taskId ?? (persisted as { context?: { taskId?: string } }).context?.taskId);
  // `input` is only read when the machine starts fresh; a restored snapshot already holds the context.
  if (inspect)
    return new InspectedTask(
      createActor(taskMachine, { snapshot: persisted as never, input: undefined as never, inspect }).start(),
    );
  return new TaskState(taskMachine.restoreSnapshot(persisted as never, scope as never) as TaskSnapshot);
}

/**
 * Applies one event if the current state accepts it. An illegal event is refused with a DomainError and the
 * task keeps its state (XState would silently ignore it; we want callers told).
 */
export function applyTaskEvent(actor: TaskActor, event: TaskEvent): { before: TaskSnapshot; after: TaskSnapshot } {
  const before = actor.getSnapshot();
  const after = actor.advance(event);
  // XState hands back the very same snapshot when no transition took the event (what `can` would have said
  // false to): one pass over the transitions instead of two. Every transition of ours assigns or moves.
  if (after === before) {
    const status: RunStatus = runStatusOf(before);
    throw new DomainError(
      "unsupported-operation",
      `This operation is not supported while the task is ${status} (${event.type})`,
      {
        status,
        event: event.type,
      },
    );
  }
  return { before, after };
}
