// Server-side cursors: find, aggregate, listCollections and listIndexes return a first batch
// and a cursor id; getMore returns the following batches; killCursors discards them.
//
// Results are computed when the cursor is opened (a snapshot); mongod reads lazily, which
// only differs for writes that happen while a cursor is open.

import { randomBytes } from "node:crypto";
import { BSON } from "mongodb";
import { bsonSize, type Doc } from "./bson-values.js";
import { MAX_BSON_OBJECT_SIZE } from "./collection-store.js";
import { ErrorCode, fail } from "./errors.js";

/** mongod's default size of a first batch when the client does not give a batchSize. */
export const DEFAULT_FIRST_BATCH_SIZE = 101;
/** mongod kills cursors idle for longer than cursorTimeoutMillis (10 minutes). */
export const CURSOR_IDLE_TIMEOUT_MS = 10 * 60 * 1000;

interface OpenCursor {
  readonly id: BSON.Long;
  readonly ns: string;
  readonly docs: readonly Doc[];
  position: number;
  lastUsed: number;
}

export class CursorManager {
  private readonly open = new Map<string, OpenCursor>();

  get size(): number {
    return this.open.size;
  }

  /**
   * Returns the `cursor` sub-document of a reply with the first batch. A cursor is only kept
   * when documents remain (otherwise the id is 0, which tells the driver not to call getMore).
   */
  openCursor(ns: string, docs: readonly Doc[], batchSize: number | undefined, singleBatch = false): Doc {
    const { batch, next } = takeBatch(docs, 0, batchSize ?? DEFAULT_FIRST_BATCH_SIZE);
    let id = BSON.Long.ZERO;
    if (next < docs.length && !singleBatch) {
      id = newCursorId();
      this.open.set(id.toString(), { id, ns, docs, position: next, lastUsed: Date.now() });
    }
    return { firstBatch: batch, id, ns };
  }

  getMore(id: BSON.Long, ns: string, batchSize: number | undefined): Doc {
    const cursor = this.open.get(id.toString());
    if (!cursor) fail(ErrorCode.CursorNotFound, `cursor id ${id.toString()} not found`);
    if (cursor.ns !== ns) {
      fail(
        ErrorCode.Unauthorized,
        `Requested getMore on namespace '${ns}', but cursor belongs to a different namespace ${cursor.ns}`,
      );
    }
    // For getMore, batchSize 0 (or none) means "as many as fit".
    const { batch, next } = takeBatch(cursor.docs, cursor.position, batchSize === 0 ? undefined : batchSize);
    cursor.position = next;
    cursor.lastUsed = Date.now();
    if (next >= cursor.docs.length) {
      this.open.delete(id.toString());
      return { nextBatch: batch, id: BSON.Long.ZERO, ns };
    }
    return { nextBatch: batch, id: cursor.id, ns };
  }

  kill(id: BSON.Long): boolean {
    return this.open.delete(id.toString());
  }

  reapIdle(now = Date.now(), timeoutMs = CURSOR_IDLE_TIMEOUT_MS): void {
    for (const [key, cursor] of this.open) if (now - cursor.lastUsed > timeoutMs) this.open.delete(key);
  }

  clear(): void {
    this.open.clear();
  }
}

/** Up to `limit` documents (no limit when undefined), and never more than 16 MiB of them. */
function takeBatch(docs: readonly Doc[], start: number, limit: number | undefined): { batch: Doc[]; next: number } {
  const batch: Doc[] = [];
  let bytes = 0;
  let position = start;
  while (position < docs.length && (limit === undefined || batch.length < limit)) {
    const doc = docs[position] as Doc;
    const size = bsonSize(doc);
    if (batch.length > 0 && bytes + size > MAX_BSON_OBJECT_SIZE) break;
    batch.push(doc);
    bytes += size;
    position++;
  }
  return { batch, next: position };
}

export function newCursorId(): BSON.Long {
  // Positive, non-zero, random 63-bit ids, like mongod's.
  const value = BigInt.asUintN(63, randomBytes(8).readBigUInt64LE());
  return BSON.Long.fromBigInt(value === 0n ? 1n : value);
}
