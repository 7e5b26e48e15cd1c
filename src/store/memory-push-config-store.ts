import {
  TooManyPushConfigsError,
  type PushConfigRecord,
  type PushConfigStore,
  type PushConfigWrite,
  type PushDeadLetter,
  type PushConfigKey,
  type PushDelivery,
  type PushLeaseFence,
} from "./push-config-store.js";

const keyOf = (taskId: string, configId: string): string => JSON.stringify([taskId, configId]);

/** In-process push configs (tests, and the in-memory fallback store). Nothing survives a restart. */
export class MemoryPushConfigStore implements PushConfigStore {
  readonly kind = "memory" as const;
  private readonly configs = new Map<string, PushConfigRecord>();
  private readonly deadLetters: PushDeadLetter[] = [];

  constructor(private readonly now: () => Date = () => new Date()) {}

  async init(): Promise<void> {}

  async upsert(config: PushConfigWrite, delivery: PushDelivery, maxPerTask: number): Promise<PushConfigRecord> {
    const key = keyOf(config.taskId, config.configId);
    const existing = this.live(key);
    if (existing) {
      const next: PushConfigRecord = { ...existing, ...structuredClone(config), revision: existing.revision + 1 };
      this.configs.set(key, next);
      return structuredClone(next);
    }
    if ((await this.list(config.taskId)).length >= maxPerTask)
      throw new TooManyPushConfigsError(config.taskId, maxPerTask);
    const created: PushConfigRecord = {
      ...structuredClone(config),
      createdAt: config.updatedAt,
      revision: 1,
      delivery: structuredClone(delivery),
      expireAt: null,
    };
    this.configs.set(key, created);
    return structuredClone(created);
  }

  async get(taskId: string, configId: string): Promise<PushConfigRecord | null> {
    const found = this.live(keyOf(taskId, configId));
    return found ? structuredClone(found) : null;
  }

  async list(taskId: string): Promise<PushConfigRecord[]> {
    return [...this.configs.keys()]
      .map((key) => this.live(key))
      .filter((c): c is PushConfigRecord => c !== undefined && c.taskId === taskId)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.configId.localeCompare(b.configId))
      .map((c) => structuredClone(c));
  }

  async delete(taskId: string, configId: string): Promise<boolean> {
    return this.configs.delete(keyOf(taskId, configId));
  }

  async deleteTask(taskId: string): Promise<number> {
    let n = 0;
    for (const [key, config] of this.configs) {
      if (config.taskId === taskId && this.configs.delete(key)) n++;
    }
    return n;
  }

  async updateDelivery(
    taskId: string,
    configId: string,
    expected: { revision: number; cursor: number; lease?: PushLeaseFence },
    delivery: PushDelivery,
    expireAt: string | null,
  ): Promise<boolean> {
    const key = keyOf(taskId, configId);
    const config = this.live(key);
    if (!config || config.revision !== expected.revision || config.delivery.cursor !== expected.cursor) return false;
    if (expected.lease && !fenceHolds(config, expected.lease)) return false;
    const lease = delivery.settled && config.lease ? { ...config.lease, owner: null, expiresAt: null } : config.lease;
    this.configs.set(key, { ...config, delivery: structuredClone(delivery), expireAt, ...(lease ? { lease } : {}) });
    return true;
  }

  async claimDelivery(
    taskId: string,
    configId: string,
    owner: string,
    now: Date,
    expiresAt: Date,
  ): Promise<PushConfigRecord | null> {
    const key = keyOf(taskId, configId);
    const config = this.live(key);
    if (!config || config.delivery.settled) return null;
    const held = config.lease;
    const free = !held?.owner || !held.expiresAt || Date.parse(held.expiresAt) <= now.getTime() || held.owner === owner;
    if (!free) return null;
    const claimed: PushConfigRecord = {
      ...config,
      lease: { owner, epoch: (held?.epoch ?? 0) + 1, expiresAt: expiresAt.toISOString() },
    };
    this.configs.set(key, claimed);
    return structuredClone(claimed);
  }

  async renewDeliveries(
    owner: string,
    leases: Array<PushConfigKey & { epoch: number }>,
    expiresAt: Date,
  ): Promise<PushConfigKey[]> {
    const kept: PushConfigKey[] = [];
    for (const { taskId, configId, epoch } of leases) {
      const config = this.live(keyOf(taskId, configId));
      if (!config?.lease || !fenceHolds(config, { owner, epoch })) continue;
      config.lease = { ...config.lease, expiresAt: expiresAt.toISOString() };
      kept.push({ taskId, configId });
    }
    return kept;
  }

  async expiredDeliveryLeases(now: Date, limit: number): Promise<PushConfigKey[]> {
    return [...this.configs.keys()]
      .map((key) => this.live(key))
      .filter(
        (c): c is PushConfigRecord => c?.lease?.expiresAt != null && Date.parse(c.lease.expiresAt) <= now.getTime(),
      )
      .slice(0, limit)
      .map(({ taskId, configId }) => ({ taskId, configId }));
  }

  async releaseDelivery(taskId: string, configId: string, fence: PushLeaseFence): Promise<void> {
    const config = this.live(keyOf(taskId, configId));
    if (config?.lease && fenceHolds(config, fence)) config.lease = { ...config.lease, owner: null, expiresAt: null };
  }

  async listUnsettled(after: { taskId: string; configId: string } | null, limit: number): Promise<PushConfigRecord[]> {
    return [...this.configs.keys()]
      .map((key) => this.live(key))
      .filter((c): c is PushConfigRecord => c !== undefined && !c.delivery.settled)
      .sort((a, b) => a.taskId.localeCompare(b.taskId) || a.configId.localeCompare(b.configId))
      .filter((c) => !after || c.taskId > after.taskId || (c.taskId === after.taskId && c.configId > after.configId))
      .slice(0, limit)
      .map((c) => structuredClone(c));
  }

  /** Idempotent by id: the first record of a given-up push stays. */
  async addDeadLetter(letter: PushDeadLetter): Promise<void> {
    if (this.deadLetters.some((d) => d.id === letter.id)) return;
    this.deadLetters.push(structuredClone(letter));
  }

  async listDeadLetters(tenant: string, filter: { taskId?: string; limit: number }): Promise<PushDeadLetter[]> {
    const now = this.now().getTime();
    return this.deadLetters
      .filter(
        (d) => d.tenant === tenant && (!filter.taskId || d.taskId === filter.taskId) && Date.parse(d.expireAt) > now,
      )
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.sequence - a.sequence)
      .slice(0, filter.limit)
      .map((d) => structuredClone(d));
  }

  async close(): Promise<void> {}

  /** Expired configs are dropped on access, as the TTL index does in MongoDB. */
  private live(key: string): PushConfigRecord | undefined {
    const config = this.configs.get(key);
    if (config?.expireAt && Date.parse(config.expireAt) <= this.now().getTime()) {
      this.configs.delete(key);
      return undefined;
    }
    return config;
  }
}

function fenceHolds(config: PushConfigRecord, fence: PushLeaseFence): boolean {
  return config.lease?.owner === fence.owner && config.lease.epoch === fence.epoch;
}
