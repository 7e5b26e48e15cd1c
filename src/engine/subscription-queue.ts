import { DomainError } from "../domain/errors.js";

/**
 * A bounded per-subscriber buffer. A subscriber that falls behind by more than `capacity` items is
 * dropped with a clear error instead of holding memory or slowing the task; it can resubscribe and catch
 * up from the store.
 */
export class SubscriptionQueue<T> {
  private readonly items: T[] = [];
  private waiter: (() => void) | undefined;
  private dropped = false;
  private closed = false;

  constructor(private readonly capacity: number) {}

  push(item: T): void {
    if (this.closed || this.dropped) return;
    if (this.items.length >= this.capacity) {
      this.dropped = true;
      this.items.length = 0;
    } else {
      this.items.push(item);
    }
    this.wake();
  }

  /** Whether items were dropped since the last `resume`; a follower that can read the store catches up instead of giving up. */
  get overflowed(): boolean {
    return this.dropped;
  }

  /** Accepts items again after an overflow (the caller has caught up from the store). */
  resume(): void {
    this.dropped = false;
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  /** The next item, or undefined once closed. Throws when this subscriber fell too far behind. */
  async next(): Promise<T | undefined> {
    for (;;) {
      if (this.dropped) {
        throw fellBehind(this.capacity);
      }
      const item = this.items.shift();
      if (item !== undefined) return item;
      if (this.closed) return undefined;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}

/** Why a subscriber more than `capacity` updates behind was dropped: `unavailable`, and it may resubscribe. */
export function fellBehind(capacity: number): DomainError {
  return new DomainError(
    "unavailable",
    `the subscriber fell more than ${capacity} updates behind and was dropped; resubscribe to catch up from the stored task`,
  );
}
