import type {
  IdempotencyKeyRef,
  IdempotencyRecord,
  IdempotencyResponse,
  IdempotencyStore,
} from "./idempotency-store.js";

/** In-process adapter (tests, and the fallback store). Nothing survives a restart. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly kind = "memory" as const;
  private readonly records = new Map<string, IdempotencyRecord>();
  /** Ids in the order they were reserved (the TTL is fixed, so in expiry order): what `reserve` sweeps. */
  private reserved: string[] = [];
  private reservedHead = 0;

  constructor(private readonly now: () => Date = () => new Date()) {}

  async init(): Promise<void> {}

  async reserve(record: IdempotencyRecord): Promise<IdempotencyRecord | null> {
    const existing = this.live(record);
    if (existing) return structuredClone(existing);
    this.sweep();
    const id = idOf(record);
    this.records.set(id, structuredClone(record));
    this.reserved.push(id);
    return null;
  }

  async complete(ref: IdempotencyKeyRef, response: IdempotencyResponse): Promise<void> {
    const record = this.live(ref);
    if (record) this.records.set(idOf(ref), { ...record, state: "completed", response: structuredClone(response) });
  }

  async release(ref: IdempotencyKeyRef): Promise<void> {
    if (this.live(ref)?.state === "reserved") this.records.delete(idOf(ref));
  }

  async get(ref: IdempotencyKeyRef): Promise<IdempotencyRecord | null> {
    const record = this.live(ref);
    return record ? structuredClone(record) : null;
  }

  async close(): Promise<void> {}

  /** Frees expired records from the front of the reservation order, as the TTL index does in MongoDB. */
  private sweep(): void {
    const now = this.now().getTime();
    while (this.reservedHead < this.reserved.length) {
      const id = this.reserved[this.reservedHead]!;
      const record = this.records.get(id);
      if (record && !(Date.parse(record.expireAt) <= now)) break;
      if (record) this.records.delete(id);
      this.reservedHead++;
    }
    if (this.reservedHead > 1024 && this.reservedHead * 2 > this.reserved.length) {
      this.reserved = this.reserved.slice(this.reservedHead);
      this.reservedHead = 0;
    }
  }

  private live(ref: IdempotencyKeyRef): IdempotencyRecord | undefined {
    const id = idOf(ref);
    const record = this.records.get(id);
    if (record && Date.parse(record.expireAt) <= this.now().getTime()) {
      this.records.delete(id);
      return undefined;
    }
    return record;
  }
}

function idOf(ref: IdempotencyKeyRef): string {
  return JSON.stringify([ref.tenant, ref.principal, ref.operation, ref.key]);
}
