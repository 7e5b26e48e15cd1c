import { FairQueue } from "../domain/fair-queue.js";
import { ShutdownSignal } from "./in-flight-work.js";
import { DEFAULT_WORK_SETTINGS, type WorkSettings } from "./work-settings.js";

export interface WorkSchedulerOptions extends Partial<WorkSettings> {
  /** Told of every admission: the tenant, and how long its work waited for its turn (0 when it ran at once). */
  admitted?(tenant: string, waitedMs: number): void;
  clock?: () => number;
}

interface Waiter {
  since: number;
  resolve(): void;
  reject(err: unknown): void;
}

/** How often a suspect that stopped holding work back looks again whether the instance is idle. */
const IDLE_CHECK_MS = 50;

/**
 * The node work an instance runs (handlers, peer calls, service calls: every node effect the driver runs, for new
 * tasks, replies, timers and recoveries alike) is admitted here. At most `concurrency` pieces run at once; the
 * rest wait in a fair queue by tenant (fair-queue.ts), so one tenant's backlog takes its turns and no more.
 *
 * It also runs suspects alone (docs/operating.md "Poison work"): `alone(taskId)` waits until nothing else runs,
 * then keeps every other piece of work waiting until `release(taskId)`. A death while it holds the instance can
 * only be the suspect's own doing. While a suspect waits, new work waits too, so the instance drains; for at
 * most `isolationWaitMs`, after which new work runs again and the suspect takes the first idle moment.
 */
export class WorkScheduler {
  private running = 0;
  private readonly queue: FairQueue<Waiter>;
  /** The task running alone now, if any. */
  private isolated: string | undefined;
  /** Suspects waiting to run alone, first come first served; they go before any queued work. */
  private readonly isolating: Array<{ taskId: string } & Waiter> = [];
  private idleCheck: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly concurrency: number;
  private readonly isolationWaitMs: number;
  private readonly clock: () => number;

  constructor(private readonly options: WorkSchedulerOptions = {}) {
    const weights = options.tenantWeights ?? DEFAULT_WORK_SETTINGS.tenantWeights;
    this.queue = new FairQueue<Waiter>((tenant) => weights[tenant] ?? 1);
    this.concurrency = options.concurrency ?? DEFAULT_WORK_SETTINGS.concurrency;
    this.isolationWaitMs = options.isolationWaitMs ?? DEFAULT_WORK_SETTINGS.isolationWaitMs;
    this.clock = options.clock ?? Date.now;
  }

  /** Pieces of work running now, and waiting for their turn. */
  get load(): { running: number; waiting: number; isolated: boolean } {
    return { running: this.running, waiting: this.queue.size, isolated: this.isolated !== undefined };
  }

  /** Runs `work` in its tenant's turn. Rejects with a ShutdownSignal if the instance stops before its turn. */
  async run<T>(tenant: string, work: () => Promise<T>): Promise<T> {
    if (this.open()) this.admit(tenant, 0);
    else
      await new Promise<void>((resolve, reject) => {
        this.queue.push(tenant, { since: this.clock(), resolve, reject });
      });
    return this.runAdmitted(work);
  }

  /** Starts `work` now if a slot is free and nobody waits before it; else undefined (the caller queues it later). */
  tryRun<T>(tenant: string, work: () => Promise<T>): Promise<T> | undefined {
    if (!this.open()) return undefined;
    this.admit(tenant, 0);
    return this.runAdmitted(work);
  }

  /** Waits until `taskId` can run alone (nothing else running), and holds the instance for it until `release`. */
  alone(taskId: string): Promise<void> {
    if (this.isolated === taskId) return Promise.resolve();
    if (this.stopped) return Promise.reject(new ShutdownSignal("shutting down"));
    return new Promise<void>((resolve, reject) => {
      this.isolating.push({ taskId, since: this.clock(), resolve, reject });
      this.pump();
    });
  }

  /** Whether `taskId` holds the instance alone now. */
  holds(taskId: string): boolean {
    return this.isolated === taskId;
  }

  /** Gives the instance back after `alone` (nothing if `taskId` does not hold it); waiting work goes on. */
  release(taskId: string): void {
    if (this.isolated !== taskId) return;
    this.isolated = undefined;
    this.pump();
  }

  /** Refuses every waiting piece of work (the instance stops; their tasks run again after the next start). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.idleCheck);
    const reason = new ShutdownSignal("shutting down");
    for (const waiter of this.queue.drain()) waiter.reject(reason);
    for (const waiter of this.isolating.splice(0)) waiter.reject(reason);
  }

  private open(): boolean {
    return (
      !this.stopped &&
      this.isolated === undefined &&
      !this.holdingBack() &&
      this.queue.size === 0 &&
      this.running < this.concurrency
    );
  }

  /** Whether a waiting suspect still holds new work back (so the instance drains for it). */
  private holdingBack(): boolean {
    const first = this.isolating[0];
    return first !== undefined && this.clock() - first.since < this.isolationWaitMs;
  }

  private admit(tenant: string, waitedMs: number): void {
    this.running++;
    this.options.admitted?.(tenant, waitedMs);
  }

  private async runAdmitted<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } finally {
      this.running--;
      this.pump();
    }
  }

  /** Hands out what can run now: a suspect once the instance is idle, else queued work in fair order. */
  private pump(): void {
    if (this.stopped || this.isolated !== undefined) return;
    if (this.isolating.length > 0) {
      if (this.running === 0) {
        clearTimeout(this.idleCheck);
        this.idleCheck = undefined;
        const next = this.isolating.shift()!;
        this.isolated = next.taskId;
        next.resolve();
        return;
      }
      // New work waits while a suspect waits, so the instance drains and the suspect gets it alone; past
      // isolationWaitMs it runs again (a long handler must not freeze the instance) and the suspect looks for an
      // idle moment.
      this.idleCheck ??= setTimeout(() => {
        this.idleCheck = undefined;
        this.pump();
      }, IDLE_CHECK_MS).unref();
      if (this.holdingBack()) return;
    }
    const now = this.clock();
    while (this.running < this.concurrency) {
      const next = this.queue.shift();
      if (!next) return;
      this.admit(next.key, now - next.item.since);
      next.item.resolve();
    }
  }
}
