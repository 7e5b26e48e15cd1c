import type { TaskRecord } from "../domain/task-record.js";

/** A noticed event the head does not cover yet (its commit is between its two writes) is re-read this often, doubling. */
export const RECHECK_FIRST_MS = 5;
export const RECHECK_MAX_MS = 500;
/** After this many re-reads the event is taken for an orphan of a dead commit; its successor will be noticed. */
export const RECHECK_LIMIT = 10;

export const recheckDelay = (attempt: number): number => Math.min(RECHECK_FIRST_MS * 2 ** attempt, RECHECK_MAX_MS);

/**
 * The store reads that commit-feed notices ask for: one read at a time (notices during a read make one more
 * after it), and again shortly, doubling, while `read` answers that a noticed event is not covered by the
 * head yet.
 */
export class NoticedReads {
  private reading = false;
  private again = false;
  private stopped = false;
  private rechecks = 0;
  private timer: NodeJS.Timeout | undefined;

  /** `read` resolves true when the head covers every noticed event. */
  constructor(
    private readonly read: () => Promise<boolean>,
    private readonly failed: (err: unknown) => void,
  ) {}

  kick(): void {
    if (this.stopped) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.reading = true;
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async run(): Promise<void> {
    let covered = true;
    try {
      do {
        this.again = false;
        covered = await this.read();
      } while (this.again && !this.stopped);
    } catch (err) {
      if (!this.stopped) this.failed(err);
      return;
    } finally {
      this.reading = false;
    }
    if (this.stopped) return;
    if (covered) this.rechecks = 0;
    else if (this.rechecks < RECHECK_LIMIT) this.timer = setTimeout(() => this.kick(), recheckDelay(this.rechecks++));
  }
}

/**
 * For a wait on a task another instance drives: each commit the feed notices re-reads the task's head, and
 * reads again shortly while the head does not yet cover the noticed event.
 */
export class HeadRefresher {
  private stopped = false;
  private noticedUpTo = -1;
  private readonly reads: NoticedReads;

  constructor(read: () => Promise<TaskRecord>, consider: (record: TaskRecord) => void) {
    this.reads = new NoticedReads(
      async () => {
        const record = await read();
        if (this.stopped) return true;
        consider(record);
        return this.noticedUpTo <= record.version;
      },
      // A failed read (the task expired, the store is away): the wait still ends at its timeout or abort.
      () => undefined,
    );
  }

  notice(sequence: number | undefined): void {
    if (sequence !== undefined) this.noticedUpTo = Math.max(this.noticedUpTo, sequence);
    this.reads.kick();
  }

  stop(): void {
    this.stopped = true;
    this.reads.stop();
  }
}
