/** At most `limit` deliveries run at once; the others wait their turn in arrival order. */
export class DeliverySlots {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  /** Waits for a slot; `now` takes one at once (shutting down: what still runs only winds down). */
  async acquire(now = false): Promise<void> {
    if (this.active < this.limit || now) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.active++;
  }

  release(): void {
    this.active--;
    this.waiters.shift()?.();
  }

  /** Lets every waiter through (shutdown). */
  wakeAll(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }
}
