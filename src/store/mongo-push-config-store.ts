import type { Collection, Db, Filter } from "mongodb";
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

/**
 * Collection `pushConfigs`: one document per (task, config id), `_id` = `["taskId","configId"]` as JSON so an
 * upsert needs no extra unique index. Token and credentials live only in `sealed` (AES-256-GCM). `expireAt`
 * is a Date for the TTL index. The delivery lease (`lease`) lives on the config document: every lease operation
 * is one single-document update by `_id`, so document atomicity picks the one winner; `lease_expiry` finds
 * the leases a dead instance left. Collection `pushDeadLetters`: pushes given up on, also TTL-bound.
 */
interface PushConfigDocument extends Omit<PushConfigRecord, "expireAt" | "lease"> {
  _id: string;
  expireAt: Date | null;
  /** The delivery lease; `expiresAt` a Date so the claim compares it with the server's ordering of dates. */
  lease?: { owner: string | null; epoch: number; expiresAt: Date | null };
}

interface DeadLetterDocument extends Omit<PushDeadLetter, "id" | "expireAt"> {
  _id: string;
  expireAt: Date;
}

const idOf = (taskId: string, configId: string): string => JSON.stringify([taskId, configId]);

export class MongoPushConfigStore implements PushConfigStore {
  readonly kind = "mongodb" as const;
  private readonly configs: Collection<PushConfigDocument>;
  private readonly deadLetters: Collection<DeadLetterDocument>;

  constructor(
    db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.configs = db.collection<PushConfigDocument>("pushConfigs");
    this.deadLetters = db.collection<DeadLetterDocument>("pushDeadLetters");
  }

  async init(): Promise<void> {
    await this.configs.createIndexes([
      { key: { taskId: 1, createdAt: 1 }, name: "task" },
      // The restart sweep: configs whose delivery is not settled, in key order.
      { key: { "delivery.settled": 1, taskId: 1, configId: 1 }, name: "unsettled" },
      { key: { expireAt: 1 }, name: "retention_ttl", expireAfterSeconds: 0 },
      // Failover: delivery leases that expired without being given back (a released lease has no expiry).
      { key: { "lease.expiresAt": 1 }, name: "lease_expiry" },
    ]);
    await this.deadLetters.createIndexes([
      { key: { tenant: 1, createdAt: -1 }, name: "tenant_recent" },
      { key: { tenant: 1, taskId: 1, createdAt: -1 }, name: "tenant_task_recent" },
      { key: { expireAt: 1 }, name: "retention_ttl", expireAfterSeconds: 0 },
    ]);
  }

  async upsert(config: PushConfigWrite, delivery: PushDelivery, maxPerTask: number): Promise<PushConfigRecord> {
    const _id = idOf(config.taskId, config.configId);
    const existing = await this.configs.findOne({ _id, ...this.notExpired() }, { projection: { _id: 1 } });
    if (
      !existing &&
      (await this.configs.countDocuments({ taskId: config.taskId, ...this.notExpired() })) >= maxPerTask
    ) {
      throw new TooManyPushConfigsError(config.taskId, maxPerTask);
    }
    const doc = await this.configs.findOneAndUpdate(
      { _id },
      {
        $set: { ...config },
        $inc: { revision: 1 },
        $setOnInsert: { createdAt: config.updatedAt, delivery, expireAt: null },
      },
      { upsert: true, returnDocument: "after" },
    );
    if (!doc) throw new Error(`push config upsert for ${_id} returned no document`);
    return toRecord(doc);
  }

  async get(taskId: string, configId: string): Promise<PushConfigRecord | null> {
    const doc = await this.configs.findOne({ _id: idOf(taskId, configId), ...this.notExpired() });
    return doc ? toRecord(doc) : null;
  }

  async list(taskId: string): Promise<PushConfigRecord[]> {
    const docs = await this.configs
      .find({ taskId, ...this.notExpired() })
      .sort({ createdAt: 1, configId: 1 })
      .toArray();
    return docs.map(toRecord);
  }

  async delete(taskId: string, configId: string): Promise<boolean> {
    return (await this.configs.deleteOne({ _id: idOf(taskId, configId) })).deletedCount === 1;
  }

  async deleteTask(taskId: string): Promise<number> {
    return (await this.configs.deleteMany({ taskId })).deletedCount;
  }

  async updateDelivery(
    taskId: string,
    configId: string,
    expected: { revision: number; cursor: number; lease?: PushLeaseFence },
    delivery: PushDelivery,
    expireAt: string | null,
  ): Promise<boolean> {
    const filter: Filter<PushConfigDocument> = {
      _id: idOf(taskId, configId),
      revision: expected.revision,
      "delivery.cursor": expected.cursor,
    };
    if (expected.lease) Object.assign(filter, fenced(expected.lease));
    // A settled config has nothing left to deliver: its lease goes with the last cursor move.
    const release = delivery.settled ? { "lease.owner": null, "lease.expiresAt": null } : {};
    const result = await this.configs.updateOne(filter, {
      $set: { delivery, expireAt: expireAt ? new Date(expireAt) : null, ...release },
    });
    return result.matchedCount === 1;
  }

  async claimDelivery(
    taskId: string,
    configId: string,
    owner: string,
    now: Date,
    expiresAt: Date,
  ): Promise<PushConfigRecord | null> {
    const doc = await this.configs.findOneAndUpdate(
      {
        _id: idOf(taskId, configId),
        "delivery.settled": false,
        $or: [
          { "lease.owner": null },
          { "lease.expiresAt": null },
          { "lease.expiresAt": { $lte: now } },
          { "lease.owner": owner },
        ],
      },
      { $set: { "lease.owner": owner, "lease.expiresAt": expiresAt }, $inc: { "lease.epoch": 1 } },
      { returnDocument: "after" },
    );
    // A config past its retention reads as gone (the TTL monitor has not dropped it yet).
    if (!doc || (doc.expireAt && doc.expireAt <= this.now())) return null;
    return toRecord(doc);
  }

  async renewDeliveries(
    owner: string,
    leases: Array<PushConfigKey & { epoch: number }>,
    expiresAt: Date,
  ): Promise<PushConfigKey[]> {
    if (leases.length === 0) return [];
    const ids = leases.map((l) => idOf(l.taskId, l.configId));
    const result = await this.configs.updateMany(
      { _id: { $in: ids }, "lease.owner": owner },
      { $set: { "lease.expiresAt": expiresAt } },
    );
    if (result.matchedCount === leases.length) return leases.map(({ taskId, configId }) => ({ taskId, configId }));
    // Some were taken over (or dropped): answer the ones still held with the same epoch.
    const docs = await this.configs
      .find({ _id: { $in: ids }, "lease.owner": owner }, { projection: { _id: 1, "lease.epoch": 1 } })
      .toArray();
    const epochs = new Map(docs.map((d) => [d._id, d.lease?.epoch]));
    return leases
      .filter((l) => epochs.get(idOf(l.taskId, l.configId)) === l.epoch)
      .map(({ taskId, configId }) => ({ taskId, configId }));
  }

  async expiredDeliveryLeases(now: Date, limit: number): Promise<PushConfigKey[]> {
    const docs = await this.configs
      .find({ "lease.expiresAt": { $lte: now } }, { projection: { _id: 0, taskId: 1, configId: 1 } })
      .limit(limit)
      .toArray();
    return docs.map(({ taskId, configId }) => ({ taskId, configId }));
  }

  async releaseDelivery(taskId: string, configId: string, fence: PushLeaseFence): Promise<void> {
    await this.configs.updateOne(
      { _id: idOf(taskId, configId), ...fenced(fence) },
      { $set: { "lease.owner": null, "lease.expiresAt": null } },
    );
  }

  async listUnsettled(after: { taskId: string; configId: string } | null, limit: number): Promise<PushConfigRecord[]> {
    const filter: Filter<PushConfigDocument> = { "delivery.settled": false };
    if (after)
      filter.$or = [{ taskId: { $gt: after.taskId } }, { taskId: after.taskId, configId: { $gt: after.configId } }];
    const docs = await this.configs.find(filter).sort({ taskId: 1, configId: 1 }).limit(limit).toArray();
    return docs.map(toRecord);
  }

  async addDeadLetter(letter: PushDeadLetter): Promise<void> {
    const { id, expireAt, ...rest } = letter;
    await this.deadLetters.updateOne(
      { _id: id },
      { $setOnInsert: { ...rest, expireAt: new Date(expireAt) } },
      { upsert: true },
    );
  }

  async listDeadLetters(tenant: string, filter: { taskId?: string; limit: number }): Promise<PushDeadLetter[]> {
    const docs = await this.deadLetters
      .find({ tenant, ...(filter.taskId ? { taskId: filter.taskId } : {}), expireAt: { $gt: this.now() } })
      .sort({ createdAt: -1, sequence: -1 })
      .limit(filter.limit)
      .toArray();
    return docs.map(({ _id, expireAt, ...rest }) => ({ ...rest, id: _id, expireAt: expireAt.toISOString() }));
  }

  /** The driver's client is owned (and closed) by the task store. */
  async close(): Promise<void> {}

  /** The TTL monitor runs about once a minute; an expired config already reads as gone. */
  private notExpired(): Filter<PushConfigDocument> {
    return { $or: [{ expireAt: null }, { expireAt: { $gt: this.now() } }] };
  }
}

function fenced(fence: PushLeaseFence): Filter<PushConfigDocument> {
  return { "lease.owner": fence.owner, "lease.epoch": fence.epoch };
}

function toRecord(doc: PushConfigDocument): PushConfigRecord {
  const { _id, expireAt, lease, ...rest } = doc;
  return {
    ...rest,
    expireAt: expireAt ? expireAt.toISOString() : null,
    ...(lease
      ? {
          lease: {
            owner: lease.owner,
            epoch: lease.epoch,
            expiresAt: lease.expiresAt ? lease.expiresAt.toISOString() : null,
          },
        }
      : {}),
  };
}
