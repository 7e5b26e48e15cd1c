/**
 * Idempotency-Key records (OpenWOP rest-endpoints.md: kept ≥ 24 h, tolerate retries). A record is written
 * BEFORE the resource it guards is created and names that resource's id, so a retry after a crash between
 * the two writes finishes the same resource instead of creating a second one.
 */
export interface IdempotencyKeyRef {
  tenant: string;
  /** The principal that sent the key: keys are private to their caller. */
  principal: string;
  /** What the key guards, e.g. "POST /v1/runs". The same key on another operation is another record. */
  operation: string;
  key: string;
}

export interface IdempotencyResponse {
  status: number;
  body: unknown;
}

export interface IdempotencyRecord extends IdempotencyKeyRef {
  /** Digest of the request that first used the key; a different request with the key is a conflict. */
  fingerprint: string;
  /** The id of the resource the request creates, chosen before it is created. */
  resourceId: string;
  /** `reserved` until the resource exists; then `completed` with the response every replay gets. */
  state: "reserved" | "completed";
  response?: IdempotencyResponse;
  createdAt: string;
  /** After this instant the record reads as absent (TTL index in MongoDB). */
  expireAt: string;
}

export interface IdempotencyStore {
  readonly kind: "memory" | "mongodb";
  init(): Promise<void>;
  /**
   * Writes `record` if no live record exists for its ref, atomically. Returns null when written, otherwise
   * the record that is already there (which is unchanged).
   */
  reserve(record: IdempotencyRecord): Promise<IdempotencyRecord | null>;
  /** Marks a reserved record completed with the response replays return. */
  complete(ref: IdempotencyKeyRef, response: IdempotencyResponse): Promise<void>;
  /** Drops a record that is still reserved (the guarded request failed and may be retried). */
  release(ref: IdempotencyKeyRef): Promise<void>;
  get(ref: IdempotencyKeyRef): Promise<IdempotencyRecord | null>;
  close(): Promise<void>;
}
