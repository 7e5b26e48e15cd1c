/** One queue per key: calls for the same key run one after another, calls for different keys in parallel. */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return run;
  }

  /** Settles when every call queued so far has finished. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.tails.values()]);
  }
}
