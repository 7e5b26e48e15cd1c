import { KeyedListeners } from "../domain/keyed-listeners.js";
import type { TaskContext } from "../machine/task-context.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import type { Logger } from "../observability/logger.js";

/** Published after a transition is committed to the store, never before. */
export interface CommittedTransition {
  record: TaskRecord;
  context: TaskContext;
  events: RunEvent[];
}

export type TransitionListener = (transition: CommittedTransition) => void;

/**
 * The transition hook: live subscribers (streams, blocking sends) and the push worker hear every commit.
 * Listeners run synchronously and must not throw into the committer; a failing listener is logged.
 */
export class TransitionHook {
  private readonly byTask = new KeyedListeners<CommittedTransition>();
  private readonly global = new Set<TransitionListener>();

  constructor(private readonly logger: Logger) {}

  onTask(taskId: string, listener: TransitionListener): () => void {
    return this.byTask.add(taskId, listener);
  }

  onAny(listener: TransitionListener): () => void {
    this.global.add(listener);
    return () => this.global.delete(listener);
  }

  publish(transition: CommittedTransition): void {
    const listeners = [...this.byTask.of(transition.record.taskId), ...this.global];
    for (const listener of listeners) {
      try {
        listener(transition);
      } catch (err) {
        this.logger.error({ err, taskId: transition.record.taskId }, "transition listener failed");
      }
    }
  }

  subscriberCount(taskId: string): number {
    return this.byTask.count(taskId);
  }
}
