import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import type { TaskContext } from "../machine/task-context.js";
import type { CommitFeed, CommitFeedMode, CommitNoticeListener } from "./commit-feed.js";

/** Published after a transition is committed to the store, never before. */
export interface CommittedTransition {
  record: TaskRecord;
  context: TaskContext;
  events: RunEvent[];
}

export type TransitionListener = (transition: CommittedTransition) => void;

/** This instance's commits as they happen (the engine's TransitionHook publishes them). */
export interface LocalCommits {
  onTask(taskId: string, listener: TransitionListener): () => void;
  onAny(listener: TransitionListener): () => void;
}

/**
 * Every commit a consumer may hear, in one port: this instance's transitions (with their events, in order)
 * and notices of commits on the same database (the store's CommitFeed: other instances'; a change stream
 * leaves this instance's own out, a poll wakes for any; the store also announces its own writes of unknown
 * outcome). A notice only says "something was committed to this task", so the
 * consumer reads the store. `remote` says how notices come: "change-stream" pushes them as they happen,
 * "poll" wakes every listened task each period, none on a store without a feed (memory). Each consumer keeps
 * its own policy: live followers take polled notices too; push delivery and a2a.invoke only pushed ones
 * (a poll would read the store per watched task every period; their sweeps and backstop polls cover it).
 */
export class CommitBus {
  constructor(
    private readonly local: LocalCommits,
    private readonly feed?: CommitFeed,
  ) {}

  /** How remote notices arrive, or undefined when there are none. */
  get remote(): CommitFeedMode | undefined {
    return this.feed?.mode;
  }

  /** True when remote notices are pushed as they happen (a change stream), not polled. */
  get remotePushed(): boolean {
    return this.feed?.mode === "change-stream";
  }

  /** This instance's commits to `taskId`; answers the unsubscribe. */
  onTask(taskId: string, listener: TransitionListener): () => void {
    return this.local.onTask(taskId, listener);
  }

  /** Every commit of this instance. */
  onAny(listener: TransitionListener): () => void {
    return this.local.onAny(listener);
  }

  /** Notices of commits to `taskId` from the feed, pushed or polled (nothing without a feed). */
  onRemote(taskId: string, listener: CommitNoticeListener): () => void {
    return this.feed?.onTask(taskId, listener) ?? noop;
  }

  /** Stops the feed (the store stays open). */
  close(): Promise<void> {
    return this.feed?.close() ?? Promise.resolve();
  }
}

function noop(): void {}
