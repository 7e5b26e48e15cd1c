// Background TTL deletion, like mongod's TTLMonitor (which wakes every ttlMonitorSleepSecs,
// 60 s by default; tests want it much more often, so the interval is configurable).

import type { Store } from "./collection-store.js";

export class TtlMonitor {
  private timer: NodeJS.Timeout | undefined;
  enabled = true;

  constructor(
    private readonly store: Store,
    private intervalMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  get interval(): number {
    return this.intervalMs;
  }

  start(): void {
    this.stop();
    this.timer = setInterval(() => this.pass(), this.intervalMs);
    // The monitor must not keep a process (or a test runner) alive on its own.
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  setInterval(intervalMs: number): void {
    this.intervalMs = intervalMs;
    if (this.timer) this.start();
  }

  /** One deletion pass over every collection; returns the number of documents removed. */
  runOnce(now = Date.now()): number {
    let removed = 0;
    for (const collection of this.store.allCollections()) removed += collection.removeExpired(now);
    return removed;
  }

  private pass(): void {
    if (!this.enabled) return;
    try {
      this.runOnce();
    } catch (error) {
      this.onError(error);
    }
  }
}
