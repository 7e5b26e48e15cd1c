import { DomainError } from "../domain/errors.js";
import { isTerminalRunStatus, TERMINAL_RUN_EVENT_TYPES } from "../domain/run-status.js";
import type { CommitBus } from "../store/commit-bus.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import { CommitFanout } from "./commit-fanout.js";
import { HeadRefresher } from "./head-refresher.js";
import { afterFanOut, type LiveSink, type StopLive } from "../domain/live-stream.js";
import { fellBehind, SubscriptionQueue } from "./subscription-queue.js";

export interface TaskObserverOptions {
  reads: Pick<TaskReadPort, "get" | "readEvents">;
  /** This instance's commits and the feed's notices of other instances' (polled ones too; none on the memory store). */
  commits: CommitBus;
  /** Commits a follower may fall behind by before it is dropped (or, with `onOverflow: "catch-up"`, re-reads the store). */
  maxBuffered: number;
  /** Events per store read. */
  pageSize?: number;
}

export interface WaitUntil {
  taskId: string;
  tenant: string;
  /** The record the caller already holds (the wait starts from it). */
  start?: TaskRecord;
  until: (record: TaskRecord) => boolean;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

export interface FollowOptions {
  signal?: AbortSignal | undefined;
  /**
   * A follower that falls more than `maxBuffered` commits behind: "drop" ends it with an `unavailable` error
   * (it may resubscribe); "catch-up" reads what it missed from the store instead.
   */
  onOverflow: "drop" | "catch-up";
}

/**
 * Watching a task's commits: the transition hook says that something was committed (and hands the events
 * over when they are next in line); the store is the source for anything the hook did not deliver (it
 * happened before the subscription, another process wrote it, or the follower fell behind). So nothing is
 * skipped or repeated, and a follower never sees a state that is not stored.
 */
export class TaskObserver {
  private readonly pageSize: number;
  private readonly fanout: CommitFanout;

  constructor(private readonly options: TaskObserverOptions) {
    this.pageSize = options.pageSize ?? 500;
    this.fanout = new CommitFanout({ reads: options.reads, commits: options.commits, pageSize: this.pageSize });
  }

  /** How many tasks have followers here (each task one channel, whatever its number of followers). */
  get followedTasks(): number {
    return this.fanout.followedTasks;
  }

  /** Resolves with the first committed record satisfying `until`, or the latest one at the timeout or abort. */
  async waitUntil(wait: WaitUntil): Promise<TaskRecord> {
    const { reads, commits } = this.options;
    let latest = wait.start;
    let resolve!: (record: TaskRecord | undefined) => void;
    const settled = new Promise<TaskRecord | undefined>((r) => (resolve = r));
    const consider = (record: TaskRecord) => {
      if (!latest || record.version > latest.version) latest = record;
      if (wait.until(record)) resolve(record);
    };
    const unsubscribe = commits.onTask(wait.taskId, ({ record }) => consider(record));
    // Commits of other instances: the feed says when, the head is read from the store.
    const refresher = new HeadRefresher(() => reads.get(wait.taskId, wait.tenant), consider);
    const unfeed = commits.onRemote(wait.taskId, ({ sequence }) => {
      // This instance's own commits reach `latest` through the hook first: no read for them.
      if (sequence === undefined || !latest || sequence > latest.version) refresher.notice(sequence);
    });
    const giveUp = () => resolve(latest);
    const timer = setTimeout(giveUp, wait.timeoutMs);
    wait.signal?.addEventListener("abort", giveUp, { once: true });
    try {
      // Catch what committed between the caller's read and the subscription. A store that stalls here must
      // not hold the caller past its timeout or abort: those settle the wait with what it has.
      const reading = reads.get(wait.taskId, wait.tenant);
      reading.catch(() => undefined); // once the wait settled first, a late failure is nobody's
      const current = await Promise.race([reading, settled]);
      if (current === undefined) return latest!;
      if (!latest || current.version > latest.version) latest = current;
      if (wait.until(latest)) return latest;
      return (await settled) ?? latest;
    } finally {
      clearTimeout(timer);
      unsubscribe();
      unfeed();
      refresher.stop();
      wait.signal?.removeEventListener("abort", giveUp);
    }
  }

  /**
   * The task's committed events with sequence >= `fromSequence`, in order, as they are committed. Ends after
   * a terminal event (`run.completed`...), when the task was already terminal and nothing is left to read,
   * or when `signal` aborts. Followers of one task share its channel (`commit-fanout.ts`): a commit is
   * handed to all of them as one batch, and the store is read only for what a follower missed.
   */
  async *follow(
    task: Pick<TaskRecord, "taskId" | "status">,
    fromSequence: number,
    options: FollowOptions,
  ): AsyncGenerator<RunEvent> {
    const queue = new SubscriptionQueue<RunEvent[] | FeedFailure>(this.options.maxBuffered);
    const member = this.fanout.join(task.taskId, fromSequence, {
      deliver: (events) => queue.push(events),
      fail: (err) => queue.push(new FeedFailure(err)),
    });
    const onAbort = () => queue.close();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const cursor = new Cursor(fromSequence);
    const pageSize = this.pageSize;
    // Everything committed up to `until` (exclusive; unbounded without it) that is not yet yielded.
    const catchUp = async function* (until?: number): AsyncGenerator<RunEvent, void> {
      for (;;) {
        const limit = cursor.limit(pageSize, until);
        if (limit <= 0) return;
        const page = await member.read(cursor.next, limit);
        const accepted = cursor.take(page);
        for (const event of accepted) yield event;
        if (cursor.ended || page.length < limit || accepted.length === 0) return;
      }
    };
    try {
      if (options.signal?.aborted) return;
      yield* catchUp();
      // A task that had already ended has nothing more to come after its log.
      if (cursor.ended || isTerminalRunStatus(task.status)) return;
      for (;;) {
        let batch: RunEvent[] | FeedFailure | undefined;
        try {
          batch = await queue.next();
        } catch (err) {
          if (!(err instanceof DomainError) || !queue.overflowed || options.onOverflow === "drop") throw err;
          queue.resume();
          yield* catchUp();
          if (cursor.ended) return;
          continue;
        }
        if (!batch) return;
        if (batch instanceof FeedFailure) throw batch.cause;
        const first = batch[0];
        if (first && first.sequence > cursor.next) yield* catchUp(first.sequence);
        if (cursor.ended) return;
        for (const event of cursor.take(batch)) yield event;
        if (cursor.ended) return;
      }
    } finally {
      member.leave();
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * `follow` through a sink: the same events in the same order, but once caught up a commit reaches the sink
   * synchronously inside the channel's delivery, with no promise per follower (so 1 000 streams of a task
   * each write their frame within one loop). The store is read first; commits delivered meanwhile are held
   * (at most `maxBuffered`, else the follower is dropped) and passed on in order once the read is done. A
   * follower whose sink has `maxBuffered` items not flushed when a commit comes is dropped with the same
   * `unavailable` error. Ends like `follow`; the returned stop releases the follower silently. Nothing is
   * passed on after the end or the stop; the channel membership is let go of right after (`afterFanOut`).
   */
  followLive(task: Pick<TaskRecord, "taskId" | "status">, fromSequence: number, sink: LiveSink<RunEvent>): StopLive {
    const { maxBuffered } = this.options;
    const pageSize = this.pageSize;
    const cursor = new Cursor(fromSequence);
    /** Commits delivered while the store is being read; undefined once live. */
    let held: RunEvent[][] | undefined = [];
    let done = false;
    const finish = (last: () => void): void => {
      if (done) return;
      done = true;
      afterFanOut(() => member.leave());
      last();
    };
    /** Passes on what of `events` is next in line; how many that was. */
    const pass = (events: RunEvent[]): number => {
      const accepted = cursor.take(events);
      for (const event of accepted) {
        if (done) break;
        sink.next(event);
      }
      if (accepted.length > 0 && !done) sink.flush?.();
      if (cursor.ended) finish(() => sink.end());
      return accepted.length;
    };
    /** Everything committed up to `until` (exclusive; unbounded without it) not passed on yet. */
    const read = async (until?: number): Promise<void> => {
      for (;;) {
        const limit = cursor.limit(pageSize, until);
        if (limit <= 0) return;
        const page = await member.read(cursor.next, limit);
        if (done) return;
        const accepted = pass(page);
        if (done || page.length < limit || accepted === 0) return;
      }
    };
    /** Reads the store (from the start, or the gap before a held commit), passes on what was held, then goes live. */
    const catchUp = async (start: boolean): Promise<void> => {
      try {
        if (start) {
          await read();
          if (done) return;
          // A task that had already ended has nothing more to come after its log.
          if (isTerminalRunStatus(task.status)) return finish(() => sink.end());
        }
        for (let batch = held!.shift(); batch; batch = held!.shift()) {
          const head = batch[0];
          if (head && head.sequence > cursor.next) await read(head.sequence);
          if (done) return;
          pass(batch);
          if (done) return;
        }
        held = undefined;
      } catch (err) {
        finish(() => sink.fail(err));
      }
    };
    const member = this.fanout.join(task.taskId, fromSequence, {
      deliver: (events) => {
        if (done) return;
        if (held) {
          if (held.length >= maxBuffered) finish(() => sink.fail(fellBehind(maxBuffered)));
          else held.push(events);
          return;
        }
        if ((sink.backlog?.() ?? 0) >= maxBuffered) return finish(() => sink.fail(fellBehind(maxBuffered)));
        const head = events[0];
        if (head && head.sequence > cursor.next) {
          // A gap (a commit of another instance, read by the channel later): read it, then this batch.
          held = [events];
          void catchUp(false);
          return;
        }
        pass(events);
      },
      fail: (err) => finish(() => sink.fail(err)),
    });
    void catchUp(true);
    return () => finish(() => undefined);
  }
}

/** A follower's place in the task's log: the next sequence it expects, and whether a terminal event ended it. */
class Cursor {
  ended = false;

  constructor(public next: number) {}

  /**
   * What of `events` is next in line, from `next` on, in order: stops at a gap (the caller reads the store)
   * and after a terminal event. An array, not a generator: the live path runs once per follower per commit.
   */
  take(events: RunEvent[]): RunEvent[] {
    const accepted: RunEvent[] = [];
    for (const event of events) {
      if (event.sequence < this.next) continue;
      if (event.sequence > this.next) break;
      this.next = event.sequence + 1;
      accepted.push(event);
      // A terminal event ends the follower unless the log goes on after it (a failed run an operator retried).
      if (TERMINAL_RUN_EVENT_TYPES.has(event.type) && !events.some((e) => e.sequence === event.sequence + 1)) {
        this.ended = true;
        break;
      }
    }
    return accepted;
  }

  /** How many events the next store page asks for, reading up to `until` (exclusive; unbounded without it). */
  limit(pageSize: number, until: number | undefined): number {
    return until === undefined ? pageSize : Math.min(pageSize, until - this.next);
  }
}

/** A queue item: the channel's store read failed, so the follower ends with that error. */
class FeedFailure {
  constructor(readonly cause: unknown) {}
}
