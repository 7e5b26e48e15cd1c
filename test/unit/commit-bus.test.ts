// The commit bus: this instance's commits plus the feed's notices, in one port, and each consumer's policy on
// remote notices: the observer follows polled ones too; push delivery and a2a.invoke only pushed ones (a
// change stream), since a poll would wake their per-task work every period.
import { describe, expect, it } from "vitest";
import type { TaskRecord } from "../../src/domain/task-record.js";
import { KeyedListeners } from "../../src/domain/keyed-listeners.js";
import { PeerNewsBoard } from "../../src/engine/nodes/a2a-invoke/a2a-invoke-news.js";
import { TaskObserver } from "../../src/engine/task-observer.js";
import { TransitionHook } from "../../src/engine/transition-hook.js";
import type { TaskContext } from "../../src/machine/task-context.js";
import { createLogger } from "../../src/observability/logger.js";
import { WatchedTasks } from "../../src/push/push-watched-tasks.js";
import { CommitBus } from "../../src/store/commit-bus.js";
import type { CommitFeed, CommitFeedMode, CommitNotice } from "../../src/store/commit-feed.js";

/** A commit feed of either mode whose notices the test sends (the store's feeds need a MongoDB). */
class SentFeed implements CommitFeed {
  private readonly listeners = new KeyedListeners<CommitNotice>();
  closed = false;
  constructor(readonly mode: CommitFeedMode) {}
  onTask(taskId: string, listener: (notice: CommitNotice) => void): () => void {
    return this.listeners.add(taskId, listener);
  }
  announce(notice: CommitNotice): void {
    for (const listener of this.listeners.of(notice.taskId)) listener(notice);
  }
  listening(taskId: string): number {
    return this.listeners.count(taskId);
  }
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

const record = (taskId: string, version: number) =>
  ({ taskId, version, tenant: "t", status: "working" }) as unknown as TaskRecord;

describe("CommitBus", () => {
  it("hands this instance's commits to the task's listeners and to every-commit listeners; without a feed there are no remote notices", async () => {
    const hook = new TransitionHook(createLogger("silent"));
    const bus = new CommitBus(hook);
    const heard: string[] = [];
    const off = bus.onTask("a", ({ record }) => heard.push(`task ${record.taskId}`));
    bus.onAny(({ record }) => heard.push(`any ${record.taskId}`));
    hook.publish({ record: record("a", 1), context: {} as TaskContext, events: [] });
    hook.publish({ record: record("b", 1), context: {} as TaskContext, events: [] });
    off();
    hook.publish({ record: record("a", 2), context: {} as TaskContext, events: [] });
    expect(heard).toEqual(["task a", "any a", "any b", "any a"]);
    expect(bus.remote).toBeUndefined();
    expect(bus.remotePushed).toBe(false);
    expect(() => bus.onRemote("a", () => undefined)()).not.toThrow();
    await bus.close();
  });

  it("polled notices: the observer follows them (reads the store); push and a2a.invoke do not listen", async () => {
    const feed = new SentFeed("poll");
    const bus = new CommitBus(new TransitionHook(createLogger("silent")), feed);
    expect(bus.remote).toBe("poll");
    expect(bus.remotePushed).toBe(false);

    const watched = new WatchedTasks(bus, () => undefined);
    watched.add("t1");
    const watch = new PeerNewsBoard(bus).watch("t1");
    expect(feed.listening("t1")).toBe(0);

    // The stored head moves on another instance; a poll (a notice without a sequence) makes the observer read it.
    let stored = record("t1", 1);
    const observer = new TaskObserver({
      reads: { get: async () => stored, readEvents: async () => [] },
      commits: bus,
      maxBuffered: 4,
    });
    const waiting = observer.waitUntil({ taskId: "t1", tenant: "t", until: (r) => r.version >= 2, timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 10));
    expect(feed.listening("t1")).toBe(1);
    stored = record("t1", 2);
    feed.announce({ taskId: "t1" });
    expect((await waiting).version).toBe(2);
    watch.close();
    watched.clear();
    await bus.close();
    expect(feed.closed).toBe(true);
  });

  it("pushed notices (a change stream): push delivery is woken past what it committed itself, a waiting a2a.invoke node hears 'remote'", async () => {
    const feed = new SentFeed("change-stream");
    const bus = new CommitBus(new TransitionHook(createLogger("silent")), feed);
    expect(bus.remotePushed).toBe(true);

    const woken: string[] = [];
    const watched = new WatchedTasks(bus, (taskId) => woken.push(taskId));
    watched.add("t1");
    watched.committedLocally("t1", 3);
    const watch = new PeerNewsBoard(bus).watch("t1");
    expect(feed.listening("t1")).toBe(2);

    feed.announce({ taskId: "t1", sequence: 3 }); // no further than this instance committed itself: nothing new
    await new Promise((r) => setImmediate(r));
    expect(woken).toEqual([]);
    feed.announce({ taskId: "t1", sequence: 4 });
    await new Promise((r) => setImmediate(r));
    expect(woken).toEqual(["t1"]);
    expect(await watch.next(1_000, new AbortController().signal)).toEqual({ kind: "remote" });

    watch.close();
    watched.clear();
    expect(feed.listening("t1")).toBe(0);
  });
});
