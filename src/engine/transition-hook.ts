import { KeyedListeners } from "../domain/keyed-listeners.js";
import type { Logger } from "../observability/logger.js";
import type { CommittedTransition, LocalCommits, TransitionListener } from "../store/commit-bus.js";

export type { CommittedTransition, TransitionListener };

/**
 * The transition hook: where the supervisor publishes this instance's commits; the commit bus
 * (store/commit-bus.ts) hands them to live subscribers (streams, blocking sends), push and a2a.invoke.
 * Listeners run synchronously and must not throw into the committer; a failing listener is logged.
 */
export class TransitionHook implements LocalCommits {
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
