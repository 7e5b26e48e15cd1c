import type { PushCommits } from "./push-ports.js";

interface Watch {
  /** Stops following the task's commits made on other instances. */
  unfollow: (() => void) | undefined;
  /** The last sequence this instance committed (the feed's notice of it then wakes nothing twice). */
  seenLocally: number;
}

/**
 * Tasks that have push configs, as this process knows them: configs stored here and every sweep's
 * unsettled ones. A commit of any other task costs no config lookup (most tasks have none). When the commit
 * bus pushes other instances' notices (a change stream), each watched task's commits made by other instances
 * wake the worker too, so the instance that holds (or can claim) a config's delivery lease hears them within
 * the feed's latency. Polled notices are not used: they would look configs up per watched task every period
 * (without change streams the sweep finds those commits).
 */
export class WatchedTasks {
  private readonly tasks = new Map<string, Watch>();
  /** Tasks with a wake-up queued from the feed: the events of one commit arrive as one notice each. */
  private readonly queued = new Set<string>();
  /** Bumped by every stored config, so a lookup that raced one does not unwatch its task. */
  private storedConfigs = 0;

  constructor(
    private readonly commits: Pick<PushCommits, "onRemote" | "remotePushed">,
    private readonly wake: (taskId: string) => void,
  ) {}

  has(taskId: string): boolean {
    return this.tasks.has(taskId);
  }

  add(taskId: string): void {
    if (this.tasks.has(taskId)) return;
    const watch: Watch = { unfollow: undefined, seenLocally: -1 };
    this.tasks.set(taskId, watch);
    if (!this.commits.remotePushed) return;
    watch.unfollow = this.commits.onRemote(taskId, (notice) => {
      if (notice.sequence !== undefined && notice.sequence <= watch.seenLocally) return;
      if (this.queued.has(taskId)) return;
      this.queued.add(taskId);
      setImmediate(() => {
        this.queued.delete(taskId);
        if (this.tasks.get(taskId) === watch) this.wake(taskId);
      });
    });
  }

  /** A config of the task was stored here. */
  stored(taskId: string): void {
    this.storedConfigs++;
    this.add(taskId);
  }

  /** A mark to pass to `deleteUnlessStored` after a lookup. */
  get mark(): number {
    return this.storedConfigs;
  }

  /** Unwatches the task unless a config was stored since `mark` (settled configs never reopen). */
  deleteUnlessStored(taskId: string, mark: number): void {
    if (this.storedConfigs !== mark) return;
    this.tasks.get(taskId)?.unfollow?.();
    this.tasks.delete(taskId);
  }

  /** This instance committed up to `sequence` on the task. */
  committedLocally(taskId: string, sequence: number): void {
    const watch = this.tasks.get(taskId);
    if (watch && sequence > watch.seenLocally) watch.seenLocally = sequence;
  }

  clear(): void {
    for (const watch of this.tasks.values()) watch.unfollow?.();
    this.tasks.clear();
    this.queued.clear();
  }
}
