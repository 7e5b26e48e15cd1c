import { DomainError } from "../domain/errors.js";

/**
 * A bounded per-subscriber buffer. A subscriber that falls behind by more than `capacity` items is
 * dropped with a clear error instead of holding memory or slowing the task; it can resubscribe and catch
 * up from the store.
 */
export class SubscriptionQueue<T> {
  private readonly items: T[] = [];
  private waiter: (() => void) | undefined;
  private overflowed = false;
  private closed = false;

  constructor(private readonly capacity: number) {}

  push(item: T): void {
    if (this.closed || this.overflowed) return;
    if (this.items.length >= this.capacity) {
      this.overflowed = true;
      this.items.length = 0;
    } else {
      this.items.push(item);
    }
    this.wake();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  /** The next item, or undefined once closed. Throws when this subscriber fell too far behind. */
  async next(): Promise<T | undefined> {
    for (;;) {
      if (this.overflowed) {
        throw new DomainError("unavailable", `the subscriber fell more than ${this.capacity} updates behind and was dropped; resubscribe to catch up from the stored task`);
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
