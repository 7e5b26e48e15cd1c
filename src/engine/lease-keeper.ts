import type { Logger } from "../observability/logger.js";
import type { TaskRepository } from "./task-repository.js";

export interface LeaseKeeperOptions {
  repository: TaskRepository;
  logger: Logger;
  clock: () => Date;
  /** A task whose lease is free: the driver takes it (acquire, then drive like a restart would). */
  kick(taskId: string): void;
  /** A task driven here that was cancelled through another instance: abort its node work. */
  cancelled(taskId: string): void;
  /** Tasks this instance left to one that has what their current node needs (TaskDriver.left): not taken here. */
  left?: Set<string>;
}

/** How many free tasks one scan hands to the driver (the next heartbeat takes the rest). */
const SCAN_LIMIT = 1_000;

/**
 * The lease heartbeat: every LEASE_HEARTBEAT_MS it renews every lease this instance holds (one store
 * command), aborts the node work of those a caller cancelled through another instance, then looks for runnable tasks whose lease is free or expired (an instance died, or shut down)
 * and hands them to the driver: failover, and start-up recovery, are the same path. When the store does not
 * answer, the instance stops taking leases and reports not ready; once its leases may have expired it
 * forgets them, so it never drives a task another instance may have taken (its writes are fenced anyway).
 */
export class LeaseKeeper {
  private loop: NodeJS.Timeout | undefined;
  private stopping = false;
  private lastBeat: number;
  private failing: string | undefined;
  private scanning: Promise<void> | undefined;

  constructor(private readonly options: LeaseKeeperOptions) {
    this.lastBeat = options.clock().getTime();
  }

  /** Why this instance must not take work now (lost heartbeat), or undefined when it is healthy. */
  get problem(): string | undefined {
    return this.failing;
  }

  start(): void {
    this.stopping = false;
    this.lastBeat = this.options.clock().getTime();
    this.schedule();
  }

  stop(): void {
    this.stopping = true;
    clearTimeout(this.loop);
  }

  /** Hands every runnable task without a live lease to the driver; answers how many. */
  async scan(): Promise<number> {
    const { repository, kick } = this.options;
    let kicked = 0;
    const free = await repository.leaseableTaskIds(SCAN_LIMIT);
    const { left } = this.options;
    // A left task no longer free (another instance took it, it ended) is forgotten; the list is whole below the limit.
    if (left && left.size > 0 && free.length < SCAN_LIMIT) {
      const still = new Set(free);
      for (const taskId of left) if (!still.has(taskId)) left.delete(taskId);
    }
    for (const taskId of free) {
      if (repository.holdsLease(taskId) || left?.has(taskId)) continue;
      kick(taskId);
      kicked++;
    }
    return kicked;
  }

  /** One heartbeat: renew, then scan. */
  async beat(): Promise<void> {
    if (await this.renew()) await this.takeOver();
  }

  /** Renews the leases held here and aborts cancelled work; false when the store did not answer. */
  private async renew(): Promise<boolean> {
    const { repository, logger, clock } = this.options;
    const settings = repository.leaseSettings;
    let cancelled: string[];
    try {
      await repository.renewLeases();
      cancelled = await repository.cancellingLeasedTasks();
      if (this.failing) logger.info({ instanceId: settings.instanceId }, "lease heartbeat restored");
      this.failing = undefined;
      this.lastBeat = clock().getTime();
    } catch (err) {
      if (!this.failing)
        logger.warn(
          { err, instanceId: settings.instanceId },
          "lease heartbeat failed: taking no leases until the store answers",
        );
      this.failing = `lease heartbeat: ${(err as Error).message.split("\n")[0]}`;
      if (clock().getTime() - this.lastBeat >= settings.ttlMs) {
        const dropped = repository.forgetLeases();
        if (dropped.length > 0)
          logger.error(
            { instanceId: settings.instanceId, taskIds: dropped },
            "task leases expired during a heartbeat outage; other instances may drive these tasks now",
          );
      }
      return false;
    }
    for (const taskId of cancelled) this.options.cancelled(taskId);
    return true;
  }

  private async takeOver(): Promise<void> {
    const kicked = await this.scan();
    if (kicked > 0)
      this.options.logger.info(
        { instanceId: this.options.repository.leaseSettings.instanceId, tasks: kicked },
        "taking over runnable tasks with a free or expired lease",
      );
  }

  /**
   * The renewals keep their own pace: the takeover scan runs beside them (one at a time), so a slow scan (a
   * loaded store, many free tasks) does not stretch the renewal period past the TTL and lose this
   * instance's own leases.
   */
  private schedule(): void {
    if (this.stopping) return;
    const warn = (err: unknown) => this.options.logger.warn({ err }, "lease scan failed");
    this.loop = setTimeout(() => {
      void this.renew()
        .then((healthy) => {
          if (healthy && !this.scanning && !this.stopping)
            this.scanning = this.takeOver()
              .catch(warn)
              .finally(() => (this.scanning = undefined));
        })
        .catch(warn)
        .finally(() => this.schedule());
    }, this.options.repository.leaseSettings.heartbeatMs);
    this.loop.unref();
  }
}
