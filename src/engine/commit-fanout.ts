import type { CommitBus } from "../store/commit-bus.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { RunEvent } from "../domain/task-record.js";
import { NoticedReads } from "./head-refresher.js";

/** What a follower hears from its task's channel. */
export interface FanoutListener {
  /** Committed events, contiguous and in order; a batch may start past the follower's next sequence (it reads the gap). */
  deliver(events: RunEvent[]): void;
  /** A store read after a commit-feed notice failed: the follower cannot know what it missed. */
  fail(err: unknown): void;
}

export interface FanoutMember {
  /** The task's committed events from `from`, at most `limit`: one store read shared by every caller asking the same at once. */
  read(from: number, limit: number): Promise<RunEvent[]>;
  leave(): void;
}

export interface CommitFanoutOptions {
  reads: Pick<TaskReadPort, "readEvents">;
  /** This instance's commits (their events) and the feed's notices, polled ones too. */
  commits: CommitBus;
  pageSize: number;
}

/**
 * The followers of each task on this instance share one channel: one local-commit listener, one
 * remote-notice listener (the commit bus) and one store read per noticed commit, whose events go to every follower as the
 * same batch. So a commit costs the same store work with one follower of the task or ten thousand.
 */
export class CommitFanout {
  private readonly channels = new Map<string, TaskChannel>();

  constructor(private readonly options: CommitFanoutOptions) {}

  /** Follows `taskId` from sequence `from` (events before it may still be delivered; the follower skips them). */
  join(taskId: string, from: number, listener: FanoutListener): FanoutMember {
    let channel = this.channels.get(taskId);
    if (!channel) {
      channel = new TaskChannel(taskId, from, this.options, () => this.channels.delete(taskId));
      this.channels.set(taskId, channel);
    }
    return channel.join(from, listener);
  }

  /** How many tasks have followers on this instance. */
  get followedTasks(): number {
    return this.channels.size;
  }
}

class TaskChannel {
  private readonly listeners = new Set<FanoutListener>();
  private readonly unhook: () => void;
  private readonly unfeed: () => void;
  /**
   * Every event below it was delivered to each current follower or committed before the follower joined
   * (so the follower's own first read has it). Deliveries move it; a follower joining lower moves it down.
   */
  private known: number;
  private noticedUpTo = -1;
  /** The polling feed woke the task (it never says up to where): read even if nothing is known to be new. */
  private polled = false;
  // The store trusts only events the head covers: a noticed event whose commit has not moved the head yet is
  // read again shortly (one timer for the task, not one per follower) until the head covers it.
  private readonly reads = new NoticedReads(
    () => this.readNew(),
    (err) => {
      for (const listener of this.listeners) listener.fail(err);
    },
  );
  private closed = false;
  private readonly inFlight = new Map<string, Promise<RunEvent[]>>();

  constructor(
    private readonly taskId: string,
    from: number,
    private readonly options: CommitFanoutOptions,
    private readonly onClose: () => void,
  ) {
    this.known = from;
    this.unhook = options.commits.onTask(taskId, ({ events }) => this.deliver(events));
    this.unfeed = options.commits.onRemote(taskId, ({ sequence }) => this.notice(sequence));
  }

  join(from: number, listener: FanoutListener): FanoutMember {
    this.known = Math.min(this.known, from);
    this.listeners.add(listener);
    return {
      read: (at, limit) => this.read(at, limit),
      leave: () => {
        this.listeners.delete(listener);
        if (this.listeners.size === 0) this.close();
      },
    };
  }

  read(from: number, limit: number): Promise<RunEvent[]> {
    const key = `${from}:${limit}`;
    let page = this.inFlight.get(key);
    if (!page) {
      page = this.options.reads.readEvents(this.taskId, from, limit).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, page);
    }
    return page;
  }

  private deliver(events: RunEvent[]): void {
    const last = events.at(-1);
    if (!last || this.closed) return;
    this.known = Math.max(this.known, last.sequence + 1);
    // A Set visits each listener once even when one leaves or joins meanwhile; no copy per commit.
    for (const listener of this.listeners) listener.deliver(events);
  }

  /** The feed saw a commit (up to `sequence`, when it knows): anything not delivered yet is read once, for all. */
  private notice(sequence: number | undefined): void {
    if (sequence === undefined) this.polled = true;
    else {
      // This instance's commits usually reach the followers through the hook before the feed tells of them.
      if (sequence < this.known) return;
      this.noticedUpTo = Math.max(this.noticedUpTo, sequence);
    }
    this.reads.kick();
  }

  /** Reads from what was not delivered yet, page by page; true when the head covers every noticed event. */
  private async readNew(): Promise<boolean> {
    // A re-read whose noticed events the hook has handed over meanwhile (this instance's own commit).
    if (!this.polled && this.noticedUpTo < this.known) return true;
    this.polled = false;
    for (;;) {
      const page = await this.read(this.known, this.options.pageSize);
      if (this.closed) return true;
      // Only what the hook did not hand over meanwhile: a stale batch would still take a place in every
      // follower's bounded queue.
      const fresh = page.findIndex((event) => event.sequence >= this.known);
      if (fresh >= 0) this.deliver(fresh === 0 ? page : page.slice(fresh));
      if (page.length < this.options.pageSize) return this.noticedUpTo < this.known;
    }
  }

  private close(): void {
    this.closed = true;
    this.unhook();
    this.unfeed();
    this.reads.stop();
    this.onClose();
  }
}
