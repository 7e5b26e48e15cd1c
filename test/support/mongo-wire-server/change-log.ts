// The change log behind change streams: every insert, replacement and update of the server's
// collections, in order, with the event a change stream returns for it. Resume tokens are
// `{_data: <hex position in the log>}`, opaque to clients as mongod's are. The log keeps at least
// the last MAX_CHANGES changes (like a capped oplog); resuming from before them is
// ChangeStreamHistoryLost. It is trimmed in chunks of TRIM_CHUNK, so a write never moves the
// whole log. Dropping a collection logs a `drop`, dropping a database a `drop` per collection
// then a `dropDatabase`; a stream on a dropped collection ends with an `invalidate` whose token
// (the drop's position, marked) may only be used with `startAfter`.

import { BSON } from "mongodb";
import { isDocument, type Doc } from "./bson-values.js";
import { ErrorCode, fail } from "./errors.js";

const MAX_CHANGES = 100_000;
const TRIM_CHUNK = 10_000;

export type OperationType = "insert" | "replace" | "update" | "drop" | "dropDatabase";

export interface Change {
  readonly position: number;
  readonly db: string;
  /** Empty for `dropDatabase`. */
  readonly coll: string;
  readonly operationType: OperationType;
  readonly event: Doc;
}

/**
 * A resume token: the position in the log. An invalidate's token is its drop's position marked
 * "ff"; a stream started after an invalidate reports, until a later change, a high-water mark past
 * it (marked "fe"), from which resumeAfter may continue without meeting the invalidate again.
 */
export type TokenKind = "event" | "invalidate" | "pastInvalidate";

const TOKEN_SUFFIX: Record<TokenKind, string> = { event: "", invalidate: "ff", pastInvalidate: "fe" };

export function token(position: number, kind: TokenKind = "event"): Doc {
  return { _data: position.toString(16).padStart(16, "0") + TOKEN_SUFFIX[kind] };
}

export function parseToken(resume: unknown, field: string): { position: number; kind: TokenKind } {
  const data = isDocument(resume) ? resume._data : undefined;
  if (typeof data !== "string" || !/^[0-9a-f]{16}(ff|fe)?$/.test(data))
    fail(ErrorCode.BadValue, `invalid resume token in ${field}: ${JSON.stringify(resume)}`);
  const suffix = data.slice(16);
  return {
    position: Number.parseInt(data.slice(0, 16), 16),
    kind: suffix === "ff" ? "invalidate" : suffix === "fe" ? "pastInvalidate" : "event",
  };
}

export function positionOf(resume: unknown, field: string): number {
  return parseToken(resume, field).position;
}

/** The event that ends a stream whose collection (or database) was dropped at `position`. */
export function invalidateEvent(position: number, clusterTime: unknown): Doc {
  return { _id: token(position, "invalidate"), operationType: "invalidate", clusterTime, wallTime: new Date() };
}

/** What top-level fields an update set or removed (mongod's updateDescription, without array truncations). */
function describeUpdate(previous: Doc, next: Doc): Doc {
  const updatedFields: Doc = {};
  for (const [key, value] of Object.entries(next)) {
    if (key !== "_id" && !Buffer.from(BSON.serialize({ v: value })).equals(BSON.serialize({ v: previous[key] })))
      updatedFields[key] = value;
  }
  const removedFields = Object.keys(previous).filter((key) => !(key in next));
  return { updatedFields, removedFields, truncatedArrays: [] };
}

function clusterTime(position: number): BSON.Timestamp {
  return new BSON.Timestamp({ t: Math.floor(Date.now() / 1000), i: position % 0xffffffff });
}

export class ChangeLog {
  private readonly changes: Change[] = [];
  private last = 0;
  private readonly waiters = new Set<() => void>();

  get position(): number {
    return this.last;
  }

  record(db: string, coll: string, operationType: OperationType, doc: Doc, previous?: Doc): void {
    const position = ++this.last;
    const event: Doc = {
      _id: token(position),
      operationType,
      clusterTime: clusterTime(position),
      wallTime: new Date(),
      ns: { db, coll },
      documentKey: { _id: doc._id },
      ...(operationType === "update" && previous
        ? { updateDescription: describeUpdate(previous, doc) }
        : { fullDocument: doc }),
    };
    this.append({ position, db, coll, operationType, event });
  }

  recordDrop(db: string, coll: string): void {
    const position = ++this.last;
    this.append({
      position,
      db,
      coll,
      operationType: "drop",
      event: {
        _id: token(position),
        operationType: "drop",
        clusterTime: clusterTime(position),
        wallTime: new Date(),
        ns: { db, coll },
      },
    });
  }

  recordDropDatabase(db: string): void {
    const position = ++this.last;
    this.append({
      position,
      db,
      coll: "",
      operationType: "dropDatabase",
      event: {
        _id: token(position),
        operationType: "dropDatabase",
        clusterTime: clusterTime(position),
        wallTime: new Date(),
        ns: { db },
      },
    });
  }

  /** The change at `position`, if the log still holds it. */
  at(position: number): Change | undefined {
    const oldest = this.changes[0]?.position;
    return oldest === undefined ? undefined : this.changes[position - oldest];
  }

  private append(change: Change): void {
    this.changes.push(change);
    if (this.changes.length >= MAX_CHANGES + TRIM_CHUNK) this.changes.splice(0, this.changes.length - MAX_CHANGES);
    for (const wake of [...this.waiters]) wake();
  }

  /** Changes after `position`, oldest first. */
  after(position: number): Change[] {
    const oldest = this.changes[0]?.position ?? this.last + 1;
    if (position < oldest - 1)
      fail(
        ErrorCode.ChangeStreamHistoryLost,
        "Resume of change stream was not possible, as the resume point may no longer be in the oplog.",
      );
    return this.changes.slice(Math.max(0, position - oldest + 1));
  }

  /** Resolves at the next change, or after `ms`. */
  waitForChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
