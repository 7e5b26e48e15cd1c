import { FairQueue } from "../domain/fair-queue.js";

/**
 * At most `limit` deliveries run at once; the others wait for their tenant's turn (a round robin by tenant,
 * weighted as WORK_TENANT_WEIGHTS: docs/operating.md "Fair work"), so one tenant's burst of pushes does not hold
 * back another's. A tenant's own deliveries keep their arrival order.
 */
export class DeliverySlots {
  private active = 0;
  private readonly waiters: FairQueue<() => void>;

  constructor(
    private readonly limit: number,
    weights: Readonly<Record<string, number>> = {},
  ) {
    this.waiters = new FairQueue((tenant) => weights[tenant] ?? 1);
  }

  /** Waits for a slot in `tenant`'s turn; `now` takes one at once (shutting down: what still runs only winds down). */
  async acquire(tenant: string, now = false): Promise<void> {
    if ((this.active < this.limit && this.waiters.size === 0) || now) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(tenant, resolve));
    this.active++;
  }

  release(): void {
    this.active--;
    this.waiters.shift()?.item();
  }

  /** Lets every waiter through (shutdown). */
  wakeAll(): void {
    for (const wake of this.waiters.drain()) wake();
  }
}
