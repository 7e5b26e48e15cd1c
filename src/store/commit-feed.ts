import { KeyedListeners } from "../domain/keyed-listeners.js";

/**
 * Commits made by other instances on the same database. The in-process transition hook only hears this
 * instance's commits; a stream on instance B for a task driven by instance A hears A's through this feed
 * (a change stream leaves this instance's own out on the server; polling wakes followers whoever committed).
 * A notice only says "something was committed to this task (up to `sequence`, when known)": the reader
 * still reads the store, which trusts only events covered by the head, so an event of a commit that has
 * not finished (or died) never reaches a subscriber.
 */
export interface CommitNotice {
  taskId: string;
  /** The version the task's head moved to, when the feed knows it (the change stream); polling does not. */
  sequence?: number;
}

export type CommitNoticeListener = (notice: CommitNotice) => void;

export interface CommitFeed {
  /** "change-stream" or "poll", for the start-up line. */
  readonly mode: CommitFeedMode;
  onTask(taskId: string, listener: CommitNoticeListener): () => void;
  /** Hands `notice` to the task's followers here, as if the feed had seen it (the store's writes of unknown outcome). */
  announce(notice: CommitNotice): void;
  close(): Promise<void>;
}

export type CommitFeedMode = "change-stream" | "poll";

/** How a MongoDB store hears other instances' commits (COMMIT_FEED, COMMIT_FEED_POLL_MS). */
export interface CommitFeedSettings {
  /** "auto": a change stream when the server allows one (replica set), polling otherwise. */
  mode: "auto" | CommitFeedMode;
  /** How often the polling fallback wakes each open follower. */
  pollMs: number;
}

/**
 * The fallback for a standalone MongoDB (no change streams): while a task has followers, they are woken
 * every `pollMs` to read the store from where they are. Costs one event read per follower per period.
 */
export class PollingCommitFeed implements CommitFeed {
  readonly mode = "poll" as const;
  private readonly fanout = new KeyedListeners<CommitNotice>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly pollMs: number) {}

  onTask(taskId: string, listener: CommitNoticeListener): () => void {
    const remove = this.fanout.add(taskId, listener);
    this.timer ??= setInterval(() => this.tick(), this.pollMs).unref();
    return () => {
      remove();
      if (this.fanout.size === 0) this.stopTimer();
    };
  }

  announce(notice: CommitNotice): void {
    for (const listener of this.fanout.of(notice.taskId)) listener(notice);
  }

  private tick(): void {
    for (const taskId of this.fanout.keys()) this.announce({ taskId });
  }

  private stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  close(): Promise<void> {
    this.stopTimer();
    return Promise.resolve();
  }
}
