import { createHash } from "node:crypto";
import { MongoServerError, type Collection, type Db } from "mongodb";
import type {
  IdempotencyKeyRef,
  IdempotencyRecord,
  IdempotencyResponse,
  IdempotencyStore,
} from "./idempotency-store.js";

interface IdempotencyDocument extends Omit<IdempotencyRecord, "expireAt"> {
  /** Digest of the ref: bounded length whatever the key, and unique per (tenant, principal, operation, key). */
  _id: string;
  expireAt: Date;
}

const DUPLICATE_KEY = 11000;

/**
 * One document per key in `idempotency_keys`. The unique `_id` makes `reserve` an atomic insert-if-absent;
 * a TTL index removes records after `expireAt` (and reads treat a record past it as gone before then).
 * Shares the task store's client, which owns the connection: `close` does nothing.
 */
export class MongoIdempotencyStore implements IdempotencyStore {
  readonly kind = "mongodb" as const;
  private readonly records: Collection<IdempotencyDocument>;

  constructor(
    db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.records = db.collection<IdempotencyDocument>("idempotency_keys");
  }

  async init(): Promise<void> {
    await this.records.createIndexes([{ key: { expireAt: 1 }, name: "idempotency_ttl", expireAfterSeconds: 0 }]);
  }

  async reserve(record: IdempotencyRecord): Promise<IdempotencyRecord | null> {
    const doc: IdempotencyDocument = { ...record, _id: idOf(record), expireAt: new Date(record.expireAt) };
    // Two attempts: the second runs only after an expired record (the TTL monitor had not removed yet) was dropped.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.records.insertOne(doc);
        return null;
      } catch (err) {
        if (!(err instanceof MongoServerError && err.code === DUPLICATE_KEY)) throw err;
      }
      const existing = await this.records.findOne({ _id: doc._id });
      if (existing && !this.expired(existing)) return toRecord(existing);
      if (existing) await this.records.deleteOne({ _id: doc._id, expireAt: { $lte: this.now() } });
    }
    const existing = await this.records.findOne({ _id: doc._id });
    if (existing) return toRecord(existing);
    throw new Error("idempotency record could not be reserved");
  }

  async complete(ref: IdempotencyKeyRef, response: IdempotencyResponse): Promise<void> {
    await this.records.updateOne({ _id: idOf(ref) }, { $set: { state: "completed", response } });
  }

  async release(ref: IdempotencyKeyRef): Promise<void> {
    await this.records.deleteOne({ _id: idOf(ref), state: "reserved" });
  }

  async get(ref: IdempotencyKeyRef): Promise<IdempotencyRecord | null> {
    const doc = await this.records.findOne({ _id: idOf(ref) });
    return doc && !this.expired(doc) ? toRecord(doc) : null;
  }

  async close(): Promise<void> {}

  private expired(doc: IdempotencyDocument): boolean {
    return doc.expireAt.getTime() <= this.now().getTime();
  }
}

function idOf(ref: IdempotencyKeyRef): string {
  return createHash("sha256")
    .update(JSON.stringify([ref.tenant, ref.principal, ref.operation, ref.key]))
    .digest("hex");
}

function toRecord(doc: IdempotencyDocument): IdempotencyRecord {
  const { _id, expireAt, ...rest } = doc;
  return { ...rest, expireAt: expireAt.toISOString() };
}
