import type { PeerTask } from "../../../peer/peer-types.js";
import type { CommitBus } from "../../../store/commit-bus.js";

/**
 * What wakes a waiting `a2a.invoke` node before its (backstop) poll is due:
 *   - "push":   our callback receiver took a push (peer-callback-service.ts) on this instance. A push signed with a
 *               key we trust for the peer was committed, and `task` is set when it carried the whole task (then no
 *               `GetTask` is needed). An unsigned push is a hint only: `state` is what it claims, nothing of it was
 *               committed, and the node reads the peer's task (`GetTask`, our credentials) before acting.
 *   - "stream": an event of the held task stream, folded into the whole task (peer-stream.ts).
 *   - "remote": another instance committed to our task (the commit bus, change stream only); the runner re-reads its stored progress.
 *   - "fetch":  read the peer task now (a stream ended on a state it cannot show, e.g. a terminal task refusing SubscribeToTask).
 */
export type PeerNews =
  | { kind: "push"; task?: PeerTask; state: string; pushedAt: string }
  | { kind: "stream"; task: PeerTask }
  | { kind: "remote" }
  | { kind: "fetch" };

/** One waiting node's inbox: news queues here (the newest stream snapshot replaces older ones) until `next` takes it. */
export class PeerNewsWatch {
  private queue: PeerNews[] = [];
  private wake: (() => void) | undefined;
  private closed = false;

  constructor(private readonly detach: () => void) {}

  /** Queues `news`; false when this watch is closed (its node no longer waits here). */
  post(news: PeerNews): boolean {
    if (this.closed) return false;
    // Only the latest whole-task snapshot of a stream matters; anything else is kept in order.
    if (news.kind === "stream") this.queue = this.queue.filter((n) => n.kind !== "stream");
    if (news.kind === "remote" && this.queue.some((n) => n.kind === "remote")) return true;
    this.queue.push(news);
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
    return true;
  }

  /** The next news, or "timeout" after `ms`, or "aborted". */
  async next(ms: number, signal: AbortSignal): Promise<PeerNews | "timeout" | "aborted"> {
    const queued = this.queue.shift();
    if (queued) return queued;
    if (signal.aborted) return "aborted";
    return new Promise((resolve) => {
      const done = (value: PeerNews | "timeout" | "aborted") => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        this.wake = undefined;
        resolve(value);
      };
      const onAbort = () => done("aborted");
      const timer = setTimeout(() => done("timeout"), Math.max(0, ms));
      signal.addEventListener("abort", onAbort, { once: true });
      this.wake = () => done(this.queue.shift() ?? "timeout");
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.wake?.();
    this.detach();
  }
}

/**
 * In-process news for the a2a.invoke nodes waiting on this instance, by our task id. The callback receiver
 * posts here after its commit; a task stream posts here as it reads; commits of other instances arrive through
 * the commit bus. Nothing here is durable: the store is (the runner reads the peer's task again after a restart).
 */
export class PeerNewsBoard {
  private readonly watches = new Map<string, Set<PeerNewsWatch>>();

  /**
   * `commits`: a push committed on another instance wakes the node here, when the bus pushes remote notices (a
   * change stream). Polled notices are not used: they would read the store per waiting node every period;
   * without change streams the backstop poll catches such a commit.
   */
  constructor(private readonly commits?: Pick<CommitBus, "onRemote" | "remotePushed">) {}

  watch(taskId: string): PeerNewsWatch {
    let set = this.watches.get(taskId);
    if (!set) this.watches.set(taskId, (set = new Set()));
    const unfeed = this.commits?.remotePushed
      ? this.commits.onRemote(taskId, () => watch.post({ kind: "remote" }))
      : undefined;
    const watch: PeerNewsWatch = new PeerNewsWatch(() => {
      unfeed?.();
      const current = this.watches.get(taskId);
      current?.delete(watch);
      if (current?.size === 0) this.watches.delete(taskId);
    });
    set.add(watch);
    return watch;
  }

  /** Posts `news` to the nodes waiting on `taskId` here; answers whether one took it (else none waits on this instance). */
  post(taskId: string, news: PeerNews): boolean {
    let taken = false;
    for (const watch of this.watches.get(taskId) ?? []) taken = watch.post(news) || taken;
    return taken;
  }
}
