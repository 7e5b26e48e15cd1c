import type { IdempotencyKeyRef, IdempotencyRecord, IdempotencyResponse, IdempotencyStore } from "./idempotency-store.js";

/** In-process adapter (tests, and the fallback store). Nothing survives a restart. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly kind = "memory" as const;
  private readonly records = new Map<string, IdempotencyRecord>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  async init(): Promise<void> {}

  async reserve(record: IdempotencyRecord): Promise<IdempotencyRecord | null> {
    const existing = this.live(record);
    if (existing) return structuredClone(existing);
    this.records.set(idOf(record), structuredClone(record));
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
