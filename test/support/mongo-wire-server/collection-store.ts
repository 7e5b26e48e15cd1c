// The in-memory data: databases -> collections -> documents and indexes.
//
// Stored documents are never modified in place: an update stores a new object. Open cursors
// can therefore keep references to the documents they are returning, and callers never share
// a reference with the store (documents come in and go out through BSON).
//
// Every write to one document checks all unique indexes before changing anything, so a
// failing write (E11000...) leaves the collection exactly as it was.

import { BSON } from "mongodb";
import { bsonSize, formatDocument, type Doc } from "./bson-values.js";
import { canonicalKey } from "./bson-compare.js";
import { ChangeLog, type OperationType } from "./change-log.js";
import { ErrorCode, fail } from "./errors.js";
import { Index, idIndexSpec, normalizeIndexSpec, sameIndexOptions, sameKeyPattern, validateId } from "./indexes.js";

export const MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024;

export class Collection {
  readonly uuid = new BSON.UUID();
  readonly options: Doc;
  /** Documents by canonical `_id`, in insertion ("natural") order. */
  private readonly docs = new Map<string, Doc>();
  private readonly indexList: Index[] = [new Index(idIndexSpec())];
  /** Natural order of each document (by canonical `_id`), so index plans return what a scan would, in the same order. */
  private readonly positions = new Map<string, number>();
  private nextPosition = 0;
  /** Where writes are recorded for change streams (collections of the server's store; not scratch copies). */
  changes: ChangeLog | undefined;

  constructor(
    readonly db: string,
    readonly name: string,
    options: Doc = {},
  ) {
    this.options = options;
  }

  get ns(): string {
    return `${this.db}.${this.name}`;
  }

  get count(): number {
    return this.docs.size;
  }

  get indexes(): readonly Index[] {
    return this.indexList;
  }

  /** The document with this canonical `_id`, and its natural position. */
  byCanonicalId(id: string): { doc: Doc; position: number } | undefined {
    const doc = this.docs.get(id);
    return doc ? { doc, position: this.positions.get(id) ?? 0 } : undefined;
  }

  /** A snapshot of the documents in natural order. */
  all(): Doc[] {
    return [...this.docs.values()];
  }

  dataSize(): number {
    let total = 0;
    for (const doc of this.docs.values()) total += bsonSize(doc);
    return total;
  }

  insert(doc: Doc): void {
    validateId(doc._id);
    const size = bsonSize(doc);
    if (size > MAX_BSON_OBJECT_SIZE)
      fail(ErrorCode.BadValue, `object to insert too large. size in bytes: ${size}, max size: ${MAX_BSON_OBJECT_SIZE}`);
    const id = canonicalKey(doc._id);
    // A new document owns no index entries yet: any holder of its keys (even of its `_id`) conflicts.
    this.checkUnique(doc, undefined);
    this.docs.set(id, doc);
    this.positions.set(id, this.nextPosition++);
    for (const index of this.indexList) index.add(doc, id);
    this.changes?.record(this.db, this.name, "insert", doc);
  }

  /** Stores `next` in place of `previous` (same `_id`); `kind` names the write for change streams. */
  replace(previous: Doc, next: Doc, kind: Exclude<OperationType, "insert"> = "update"): void {
    validateId(next._id);
    const size = bsonSize(next);
    if (size > MAX_BSON_OBJECT_SIZE)
      fail(17419, `Resulting document after update is larger than ${MAX_BSON_OBJECT_SIZE}`);
    const id = canonicalKey(previous._id);
    this.checkUnique(next, id);
    for (const index of this.indexList) index.remove(previous, id);
    this.docs.set(id, next); // Map.set on an existing key keeps the document's natural position
    for (const index of this.indexList) index.add(next, id);
    this.changes?.record(this.db, this.name, kind, next, previous);
  }

  remove(doc: Doc): boolean {
    const id = canonicalKey(doc._id);
    const stored = this.docs.get(id);
    if (!stored) return false;
    for (const index of this.indexList) index.remove(stored, id);
    this.docs.delete(id);
    this.positions.delete(id);
    return true;
  }

  /** `ownId`: the document being replaced, whose current index entries do not count. */
  private checkUnique(doc: Doc, ownId: string | undefined): void {
    for (const index of this.indexList) {
      const conflict = index.findConflict(doc, ownId);
      if (conflict) throw index.duplicateKeyError(this.ns, conflict);
    }
  }

  /**
   * Adds the index described by a createIndexes entry. Returns false when an identical index
   * already exists; fails like mongod for conflicting names/options or duplicate existing data.
   */
  createIndex(rawSpec: unknown): boolean {
    return this.createIndexes([rawSpec]) > 0;
  }

  /**
   * createIndexes, all-or-nothing: every new index is checked against the existing ones and those
   * requested before it, and built over the documents, before any becomes visible. Returns how many
   * were new. Only the new indexes are built (one pass over the documents each), so re-declaring the
   * indexes of a large collection at start-up costs no copy of it.
   */
  createIndexes(rawSpecs: readonly unknown[]): number {
    const accepted: Index[] = [];
    for (const rawSpec of rawSpecs) {
      const spec = normalizeIndexSpec(rawSpec);
      if (this.admits(spec, [...this.indexList, ...accepted])) accepted.push(this.buildIndex(spec));
    }
    this.indexList.push(...accepted);
    return accepted.length;
  }

  /** Whether `spec` is a new index next to `list` (false: an identical one exists); fails on a conflict. */
  private admits(spec: Doc, list: readonly Index[]): boolean {
    const byName = list.find((index) => index.name === spec.name);
    if (byName) {
      if (sameKeyPattern(byName.spec, spec) && sameIndexOptions(byName.spec, spec)) return false;
      const detail = `Requested index: ${describeSpec(spec)}, existing index: ${describeSpec(byName.spec)}`;
      if (sameKeyPattern(byName.spec, spec)) {
        fail(
          ErrorCode.IndexOptionsConflict,
          `An equivalent index already exists with the same name but different options. ${detail}`,
        );
      }
      fail(
        ErrorCode.IndexKeySpecsConflict,
        `An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. ${detail}`,
      );
    }
    const byKey = list.find((index) => sameKeyPattern(index.spec, spec) && sameIndexOptions(index.spec, spec));
    if (byKey) fail(ErrorCode.IndexOptionsConflict, `Index already exists with a different name: ${byKey.name}`);
    // Several indexes may share a key pattern only when their partial filters tell them apart.
    const sameKeyOtherOptions = list.find(
      (index) =>
        sameKeyPattern(index.spec, spec) && !spec.partialFilterExpression && !index.spec.partialFilterExpression,
    );
    if (sameKeyOtherOptions) {
      fail(
        ErrorCode.IndexOptionsConflict,
        `An existing index has the same key pattern but different options. Requested index: ${describeSpec(spec)}, existing index: ${describeSpec(sameKeyOtherOptions.spec)}`,
      );
    }
    return true;
  }

  /** The index over the existing documents, not yet visible; fails on duplicate data for a unique one. */
  private buildIndex(spec: Doc): Index {
    const requested = new Index(spec);
    for (const [id, doc] of this.docs) {
      const conflict = requested.findConflict(doc, undefined);
      if (conflict) {
        const error = requested.duplicateKeyError(this.ns, conflict);
        fail(
          error.code,
          `Index build failed: ${this.uuid.toHexString()}: Collection ${this.ns} ( ${this.uuid.toHexString()} ) :: caused by :: ${error.message}`,
          error.extra,
        );
      }
      requested.add(doc, id);
    }
    return requested;
  }

  dropIndex(name: string): void {
    if (name === "_id_") fail(ErrorCode.InvalidOptions, "cannot drop _id index");
    const position = this.indexList.findIndex((index) => index.name === name);
    if (position < 0) fail(ErrorCode.IndexNotFound, `index not found with name [${name}]`);
    this.indexList.splice(position, 1);
  }

  /** TTL: removes documents whose indexed date is older than expireAfterSeconds (found through the index). */
  removeExpired(now: number): number {
    let removed = 0;
    for (const index of this.indexList) {
      if (index.expireAfterSeconds === undefined || index.fields.length !== 1) continue;
      for (const id of index.idsWithDateBefore(now - index.expireAfterSeconds * 1000)) {
        const doc = this.docs.get(id);
        if (doc && this.remove(doc)) removed++;
      }
    }
    return removed;
  }
}

function describeSpec(spec: Doc): string {
  return formatDocument(spec);
}

const INVALID_DB_CHARS = /[/\\. "$*<>:|?\0]/;

export function validateDatabaseName(db: string): void {
  if (db === "" || INVALID_DB_CHARS.test(db) || Buffer.byteLength(db) >= 64) {
    fail(ErrorCode.InvalidNamespace, `Invalid database name: '${db}'`);
  }
}

export function validateCollectionName(db: string, name: string): void {
  if (name === "" || name.includes("$") || name.includes("\0") || name.startsWith(".")) {
    fail(ErrorCode.InvalidNamespace, `Invalid namespace specified '${db}.${name}'`);
  }
}

/** serverStatus `metrics.queryExecutor`: keys and documents the queries examined, and how many scanned a whole collection. */
export interface QueryStats {
  scanned: number;
  scannedObjects: number;
  collectionScans: number;
}

export class Store {
  private readonly databases = new Map<string, Map<string, Collection>>();
  readonly changes = new ChangeLog();
  readonly queryStats: QueryStats = { scanned: 0, scannedObjects: 0, collectionScans: 0 };

  getCollection(db: string, name: string): Collection | undefined {
    return this.databases.get(db)?.get(name);
  }

  /** Collections are created implicitly by the first write or index, as in mongod. */
  getOrCreateCollection(db: string, name: string): { collection: Collection; created: boolean } {
    const existing = this.getCollection(db, name);
    if (existing) return { collection: existing, created: false };
    return { collection: this.createCollection(db, name, {}), created: true };
  }

  createCollection(db: string, name: string, options: Doc): Collection {
    validateDatabaseName(db);
    validateCollectionName(db, name);
    if (this.getCollection(db, name)) fail(ErrorCode.NamespaceExists, `Collection ${db}.${name} already exists.`);
    const collections = this.databases.get(db) ?? new Map<string, Collection>();
    const collection = new Collection(db, name, options);
    collection.changes = this.changes;
    collections.set(name, collection);
    this.databases.set(db, collections);
    return collection;
  }

  dropCollection(db: string, name: string): Collection | undefined {
    const collections = this.databases.get(db);
    const collection = collections?.get(name);
    if (!collections || !collection) return undefined;
    collections.delete(name);
    // A database without collections no longer exists (listDatabases stops showing it).
    if (collections.size === 0) this.databases.delete(db);
    this.changes.recordDrop(db, name);
    return collection;
  }

  /** As mongod: a `drop` event for each collection, then `dropDatabase`. */
  dropDatabase(db: string): void {
    const collections = this.databases.get(db);
    if (!collections) return;
    this.databases.delete(db);
    for (const name of [...collections.keys()].sort()) this.changes.recordDrop(db, name);
    this.changes.recordDropDatabase(db);
  }

  databaseNames(): string[] {
    return [...this.databases.keys()].sort();
  }

  collections(db: string): Collection[] {
    return [...(this.databases.get(db)?.values() ?? [])].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
  }

  allCollections(): Collection[] {
    return [...this.databases.values()].flatMap((collections) => [...collections.values()]);
  }
}
