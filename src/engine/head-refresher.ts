import type { TaskRecord } from "../store/task-store.js";

/** A noticed event the head does not cover yet (its commit is between its two writes) is re-read this often, doubling. */
export const RECHECK_FIRST_MS = 5;
export const RECHECK_MAX_MS = 500;
/** After this many re-reads the event is taken for an orphan of a dead commit; its successor will be noticed. */
export const RECHECK_LIMIT = 10;

export const recheckDelay = (attempt: number): number => Math.min(RECHECK_FIRST_MS * 2 ** attempt, RECHECK_MAX_MS);

/**
 * For a wait on a task another instance drives: each commit the feed notices re-reads the task's head (one
 * read at a time, one more if notices came meanwhile), and reads again shortly while the head does not yet
 * cover the noticed event.
 */
export class HeadRefresher {
  private reading = false;
  private again = false;
  private stopped = false;
  private noticedUpTo = -1;
  private rechecks = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly read: () => Promise<TaskRecord>,
    private readonly consider: (record: TaskRecord) => void,
  ) {}

  notice(sequence: number | undefined): void {
    if (sequence !== undefined) this.noticedUpTo = Math.max(this.noticedUpTo, sequence);
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private kick(): void {
    if (this.stopped) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    void this.run();
  }

  private async run(): Promise<void> {
    try {
      do {
        this.again = false;
        const record = await this.read();
        if (this.stopped) return;
        this.consider(record);
        if (this.noticedUpTo <= record.version) this.rechecks = 0;
        else if (!this.again && this.rechecks < RECHECK_LIMIT) this.timer = setTimeout(() => this.kick(), recheckDelay(this.rechecks++));
      } while (this.again && !this.stopped);
    } catch {
      // A failed read (the task expired, the store is away): the wait still ends at its timeout or abort.
    } finally {
      this.reading = false;
    }
  }
}
