/** One write waiting for its batch: `key` names the task it writes (at most one per task per batch). */
export interface PendingWrite {
  readonly key: string;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Group commit: writes submitted while no batch is being written go out together at the next microtask
 * boundary (so a lone writer waits for no timer); writes submitted while a batch is in flight wait for it
 * and go out together in the next one. A batch holds at most one write per task, so two writes to the
 * same task never race inside this process: the later one runs after the earlier one settled, and its
 * version check sees the outcome.
 */
export class GroupCommit<W extends PendingWrite> {
  private queue: W[] = [];
  private scheduled = false;
  private flushing = false;

  /** `writeBatch` settles every write of the batch it is given (resolve or reject) and never throws. */
  constructor(
    private readonly writeBatch: (batch: W[]) => Promise<void>,
    private readonly maxBatch = 512,
  ) {}

  submit(write: W): void {
    this.queue.push(write);
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    queueMicrotask(() => void this.drain());
  }

  private async drain(): Promise<void> {
    this.scheduled = false;
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.take();
        await this.writeBatch(batch).catch((err: unknown) => batch.forEach((w) => w.reject(err)));
      }
    } finally {
      this.flushing = false;
    }
  }

  /** The oldest write of each task, in arrival order; later writes of the same task wait for the next batch. */
  private take(): W[] {
    const batch: W[] = [];
    const rest: W[] = [];
    const keys = new Set<string>();
    for (const write of this.queue) {
      if (batch.length < this.maxBatch && !keys.has(write.key)) {
        keys.add(write.key);
        batch.push(write);
      } else rest.push(write);
    }
    this.queue = rest;
    return batch;
  }
}
