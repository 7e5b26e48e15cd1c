import type { Logger } from "../observability/logger.js";
import type { PushConfigKey, PushConfigRecord, PushConfigStore, PushLeaseFence } from "../store/push-config-store.js";

/** Who this instance is and the lease timing: the task lease settings (INSTANCE_ID, LEASE_TTL_MS, LEASE_HEARTBEAT_MS). */
export interface PushLeaseSettings {
  instanceId: string;
  ttlMs: number;
  heartbeatMs: number;
}

export interface DeliveryLeasesOptions {
  configs: PushConfigStore;
  settings: PushLeaseSettings;
  logger: Logger;
  clock: () => Date;
  /** Configs whose lease expired without being given back (found every heartbeat): the worker takes them over. */
  expired: (keys: PushConfigKey[]) => void;
}

interface Held {
  taskId: string;
  configId: string;
  epoch: number;
  /** When the store last confirmed the lease (claim or renewal started), local clock. */
  confirmedAt: number;
}

/** How many expired leases one heartbeat hands to the worker (the next heartbeat takes the rest). */
const EXPIRED_SCAN_LIMIT = 500;

const keyOf = (taskId: string, configId: string): string => JSON.stringify([taskId, configId]);

/**
 * The delivery leases this instance holds, one per push config it is delivering (or holding a retry for).
 * A claim takes a free or expired lease; the heartbeat renews every held lease in one command and looks for
 * leases that expired without being given back (their holder died: failover within TTL + heartbeat); a
 * lease is given back when its config is idle, and all of them on shutdown. Before each POST the holder makes sure
 * the lease was confirmed within half its TTL: a process that was frozen (GC pause, SIGSTOP) longer than
 * that renews it first, fenced by its epoch, and stops if another instance took it meanwhile.
 */
export class DeliveryLeases {
  private readonly held = new Map<string, Held>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private renewing: Promise<void> | undefined;
  private scanning: Promise<void> | undefined;

  constructor(private readonly options: DeliveryLeasesOptions) {}

  get instanceId(): string {
    return this.options.settings.instanceId;
  }

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Stops renewing and gives every held lease back, so other instances continue at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.allSettled([this.renewing, this.scanning]);
    const held = [...this.held.values()];
    this.held.clear();
    await Promise.allSettled(
      held.map((h) =>
        this.options.configs.releaseDelivery(h.taskId, h.configId, { owner: this.instanceId, epoch: h.epoch }),
      ),
    );
  }

  /** The fence of the lease held here for the config, if any. */
  fence(taskId: string, configId: string): PushLeaseFence | undefined {
    const held = this.held.get(keyOf(taskId, configId));
    return held ? { owner: this.instanceId, epoch: held.epoch } : undefined;
  }

  /** Whether this process holds the config's lease and the stored config still names it (else it is forgotten). */
  holds(config: PushConfigRecord): boolean {
    const key = keyOf(config.taskId, config.configId);
    const held = this.held.get(key);
    if (!held) return false;
    if (config.lease?.owner === this.instanceId && config.lease.epoch === held.epoch) return true;
    this.lost(held);
    return false;
  }

  /** Whether another instance holds a live lease on the config. */
  heldElsewhere(config: PushConfigRecord, now: number): boolean {
    const lease = config.lease;
    return Boolean(
      lease?.owner && lease.expiresAt && lease.owner !== this.instanceId && Date.parse(lease.expiresAt) > now,
    );
  }

  /** Claims the config's lease; answers the config as stored after the claim, or null when another instance holds it. */
  async claim(config: PushConfigRecord): Promise<PushConfigRecord | null> {
    const { configs, settings, logger, clock } = this.options;
    const now = clock();
    const claimed = await configs.claimDelivery(
      config.taskId,
      config.configId,
      settings.instanceId,
      now,
      new Date(now.getTime() + settings.ttlMs),
    );
    if (!claimed?.lease) return null;
    this.held.set(keyOf(config.taskId, config.configId), {
      taskId: config.taskId,
      configId: config.configId,
      epoch: claimed.lease.epoch,
      confirmedAt: now.getTime(),
    });
    const previous = config.lease?.owner;
    const fields = {
      taskId: config.taskId,
      configId: config.configId,
      instanceId: settings.instanceId,
      epoch: claimed.lease.epoch,
      cursor: claimed.delivery.cursor,
    };
    if (previous && previous !== settings.instanceId)
      logger.info(
        { ...fields, previousOwner: previous },
        "push: took over the delivery lease of an expired owner; continuing from the stored cursor",
      );
    else logger.debug(fields, "push: delivery lease claimed");
    return claimed;
  }

  /**
   * True when the lease may be relied on for one more POST: confirmed within half the TTL, or renewed now.
   * False (and forgotten) when another instance took it over.
   */
  async confirm(taskId: string, configId: string): Promise<boolean> {
    const held = this.held.get(keyOf(taskId, configId));
    if (!held) return false;
    const { configs, settings, clock } = this.options;
    const now = clock().getTime();
    if (now - held.confirmedAt < settings.ttlMs / 2) return true;
    const kept = await configs.renewDeliveries(settings.instanceId, [held], new Date(now + settings.ttlMs));
    if (kept.length === 0) {
      this.lost(held);
      return false;
    }
    held.confirmedAt = now;
    return true;
  }

  /** Gives the lease back (the config is idle: nothing pending, no retry waiting). */
  async release(taskId: string, configId: string): Promise<void> {
    const key = keyOf(taskId, configId);
    const held = this.held.get(key);
    if (!held) return;
    this.held.delete(key);
    await this.options.configs.releaseDelivery(taskId, configId, { owner: this.instanceId, epoch: held.epoch });
    this.options.logger.debug(
      { taskId, configId, instanceId: this.instanceId, epoch: held.epoch },
      "push: delivery lease released",
    );
  }

  /** Drops the lease without a store command (the config is gone or settled, which released it). */
  forget(taskId: string, configId: string): void {
    this.held.delete(keyOf(taskId, configId));
  }

  isHeld(taskId: string, configId: string): boolean {
    return this.held.has(keyOf(taskId, configId));
  }

  /** One heartbeat: renews every held lease (the ones another instance took are forgotten), then finds expired ones. */
  async beat(): Promise<void> {
    await this.renew();
    await this.scanExpired();
  }

  private async scanExpired(): Promise<void> {
    const expired = await this.options.configs.expiredDeliveryLeases(this.options.clock(), EXPIRED_SCAN_LIMIT);
    if (expired.length > 0 && !this.stopped) this.options.expired(expired);
  }

  private async renew(): Promise<void> {
    const { configs, settings, clock } = this.options;
    const held = [...this.held.values()];
    if (held.length === 0) return;
    const started = clock().getTime();
    const kept = new Set(
      (await configs.renewDeliveries(settings.instanceId, held, new Date(started + settings.ttlMs))).map((k) =>
        keyOf(k.taskId, k.configId),
      ),
    );
    for (const h of held) {
      const key = keyOf(h.taskId, h.configId);
      if (kept.has(key)) h.confirmedAt = Math.max(h.confirmedAt, started);
      else this.lost(h);
    }
  }

  private lost(held: Held): void {
    const key = keyOf(held.taskId, held.configId);
    if (this.held.get(key) !== held) return;
    this.held.delete(key);
    this.options.logger.warn(
      { taskId: held.taskId, configId: held.configId, instanceId: this.instanceId, epoch: held.epoch },
      "push: delivery lease lost; another instance delivers this config",
    );
  }

  /**
   * Renewals keep their own pace; the scan for expired leases runs beside them, one at a time, so a slow scan
   * never stretches the renewal period (as in the task LeaseKeeper).
   */
  private schedule(): void {
    if (this.stopped) return;
    const { logger } = this.options;
    this.timer = setTimeout(() => {
      if (!this.scanning) {
        this.scanning = this.scanExpired()
          .catch((err: unknown) =>
            logger.warn({ err, instanceId: this.instanceId }, "push: the scan for expired delivery leases failed"),
          )
          .finally(() => (this.scanning = undefined));
      }
      this.renewing = this.renew()
        .catch((err: unknown) =>
          logger.warn(
            { err, instanceId: this.instanceId },
            "push: delivery lease renewal failed; leases are confirmed again before the next push",
          ),
        )
        .finally(() => {
          this.renewing = undefined;
          this.schedule();
        });
    }, this.options.settings.heartbeatMs);
    this.timer.unref();
  }
}
