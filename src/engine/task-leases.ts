import { RUNNABLE_RUN_STATUSES } from "../domain/run-status.js";
import { LeaseLostError, type LeaseFence, type TaskRecordChanges, type TaskStore } from "../store/task-store.js";
import type { LeaseSettings } from "./lease-settings.js";

/**
 * The task execution leases this instance holds, for the repository (the only writer): which tasks it drives and
 * at which epoch, which of them it took from a holder that died, and the fence each driver write carries. Every
 * lease command goes to the store from here; the repository calls in around its writes.
 */
export class TaskLeases {
  /** Tasks whose lease this instance holds → its epoch. */
  private readonly held = new Map<string, number>();
  /**
   * Tasks whose lease this instance took from a holder that never gave it back (it died, or stalled past the
   * TTL), until the first write after: the driver counts a node it finds started there as a crashed attempt.
   */
  private readonly takenFromDead = new Set<string>();
  /** Tasks whose current locked section is the driver's; `released` once a write of it gave the lease back. */
  private readonly fencedSections = new Map<string, { released: boolean }>();

  constructor(
    private readonly store: TaskStore,
    readonly settings: LeaseSettings,
    private readonly clock: () => Date,
  ) {}

  /** A driver's locked section begins (`fenced`) or ends. */
  enterSection(taskId: string): void {
    this.fencedSections.set(taskId, { released: false });
  }

  leaveSection(taskId: string): void {
    this.fencedSections.delete(taskId);
  }

  holds(taskId: string): boolean {
    return this.held.has(taskId);
  }

  heldCount(): number {
    return this.held.size;
  }

  /** Takes the task's lease if it is runnable and free or expired (epoch + 1); false when another instance holds it. */
  async acquire(taskId: string): Promise<boolean> {
    const now = this.clock();
    const lease = await this.store.acquireLease(taskId, this.settings.instanceId, now, this.expiry(now));
    if (lease) this.held.set(taskId, lease.epoch);
    if (lease?.unreleased) this.takenFromDead.add(taskId);
    return lease !== null;
  }

  /** Once per acquisition: whether the lease held now was taken from a holder that never released it. */
  takeFromDeadHolder(taskId: string): boolean {
    return this.takenFromDead.delete(taskId);
  }

  /** Forgets the lease held here and gives it back in the store; false when none was held. */
  async release(taskId: string): Promise<boolean> {
    const epoch = this.held.get(taskId);
    this.takenFromDead.delete(taskId);
    if (epoch === undefined) return false;
    this.held.delete(taskId);
    await this.store.releaseLease(taskId, this.settings.instanceId, epoch);
    return true;
  }

  /** Heartbeat: one store command renews every lease held here. */
  async renew(): Promise<void> {
    if (this.held.size === 0) return;
    await this.store.renewLeases(this.settings.instanceId, [...this.held.keys()], this.expiry(this.clock()));
  }

  /** Drops every lease held here (others may have taken them); the ids they were for. */
  forget(): string[] {
    const ids = [...this.held.keys()];
    this.held.clear();
    this.takenFromDead.clear();
    return ids;
  }

  /** The tasks driven here that a caller on any instance asked to cancel since. */
  async cancelling(): Promise<string[]> {
    return this.held.size === 0 ? [] : this.store.cancellingTaskIds([...this.held.keys()]);
  }

  leaseable(limit: number): Promise<string[]> {
    return this.store.leaseableTaskIds(this.clock(), this.settings.instanceId, limit);
  }

  /** Claims a due timer for this instance; a claimer that dies leaves it due again one lease TTL later. */
  claimTimer(taskId: string): Promise<boolean> {
    const now = this.clock();
    return this.store.claimTimer(taskId, now, this.expiry(now));
  }

  /**
   * The fence of a driver's write: the lease we hold (or, for the creating write, epoch 1), renewed while the
   * task stays runnable and released with the write that makes it wait or end. None outside the driver.
   */
  fenceFor(taskId: string, changes: TaskRecordChanges, stored: boolean): LeaseFence | undefined {
    const section = this.fencedSections.get(taskId);
    // After the section gave the lease back (the task waits), its last writes need only the version check.
    if (!section || section.released) return undefined;
    const epoch = stored ? this.held.get(taskId) : 1;
    // A driver without the lease (lost to a heartbeat outage) must not write at all.
    if (epoch === undefined) throw new LeaseLostError(taskId, this.settings.instanceId, 0);
    const now = this.clock();
    // A running task waiting for its timer (a delay node) needs no driver until the timer fires either.
    const waiting =
      !RUNNABLE_RUN_STATUSES.has(changes.status) ||
      (!!changes.timerDueAt && Date.parse(changes.timerDueAt) > now.getTime());
    if (!stored && waiting) {
      section.released = true;
      return undefined;
    }
    return { owner: this.settings.instanceId, epoch, expiresAt: waiting ? null : this.expiry(now).toISOString() };
  }

  /** After a driver write stored with `fence`: the lease is held on, or was given back with it. */
  written(taskId: string, fence: LeaseFence | undefined): void {
    if (!fence) return;
    if (fence.expiresAt) this.held.set(taskId, fence.epoch);
    else {
      this.held.delete(taskId);
      const section = this.fencedSections.get(taskId);
      if (section) section.released = true;
    }
    this.takenFromDead.delete(taskId);
  }

  /** A write the store refused because another instance holds the lease now. */
  lost(taskId: string): void {
    this.held.delete(taskId);
    this.takenFromDead.delete(taskId);
  }

  private expiry(now: Date): Date {
    return new Date(now.getTime() + this.settings.ttlMs);
  }
}
