// Index specifications and index keys: unique (including `_id`), sparse and partial indexes are
// enforced; TTL indexes are read by the TTL monitor. Every index also keeps its keys as a tree
// (one level per key field), which the query planner (query-planner.ts) walks for equality
// prefixes and a range on the next field, counting the keys it examines.

import { BSON } from "mongodb";
import {
  bsonTypeName,
  canonicalTypeOrder,
  formatDocument,
  formatValue,
  isDocument,
  isNumeric,
  isTruthy,
  sameBytes,
  toDouble,
  type Doc,
} from "./bson-values.js";
import { canonicalKey } from "./bson-compare.js";
import { someValueAtPath, splitPath } from "./document-paths.js";
import { CommandError, ErrorCode, fail } from "./errors.js";
import { compileFilter, type DocPredicate } from "./query-matcher.js";
import { SortedKeys } from "./sorted-keys.js";

/** One key an index holds for a document: the field values in key-pattern order. */
export interface IndexKey {
  readonly canonical: string;
  readonly values: readonly unknown[];
}

const ALLOWED_SPEC_FIELDS = new Set([
  "v",
  "key",
  "name",
  "unique",
  "sparse",
  "partialFilterExpression",
  "expireAfterSeconds",
  "background",
  "hidden",
  "collation",
  "weights",
  "default_language",
  "language_override",
  "textIndexVersion",
  "2dsphereIndexVersion",
  "bits",
  "min",
  "max",
  "wildcardProjection",
  "storageEngine",
  "ns",
]);
const INDEX_TYPES = new Set(["text", "2d", "2dsphere", "hashed", "geoHaystack"]);
const MAX_EXPIRE_AFTER_SECONDS = 2147483647;

/** Validates a createIndexes entry and returns it as listIndexes shows it: {v: 2, key, name, ...}. */
export function normalizeIndexSpec(raw: unknown): Doc {
  if (!isDocument(raw))
    fail(ErrorCode.TypeMismatch, "The 'indexes' field must be an array of index specification objects");
  const describe = formatDocument(raw);
  for (const field of Object.keys(raw)) {
    if (!ALLOWED_SPEC_FIELDS.has(field))
      fail(
        ErrorCode.InvalidIndexSpecificationOption,
        `The field '${field}' is not valid for an index specification. Specification: ${describe}`,
      );
  }
  const key = raw.key;
  if (!isDocument(key))
    fail(
      ErrorCode.TypeMismatch,
      `Error in specification ${describe} :: caused by :: The 'key' field must be an object`,
    );
  if (Object.keys(key).length === 0)
    fail(
      ErrorCode.CannotCreateIndex,
      `Error in specification ${describe} :: caused by :: Index keys cannot be an empty field.`,
    );
  for (const [field, value] of Object.entries(key)) {
    if (field === "")
      fail(
        ErrorCode.CannotCreateIndex,
        `Error in specification ${describe} :: caused by :: Index keys cannot be an empty field.`,
      );
    if (isNumeric(value) ? toDouble(value) === 0 : typeof value !== "string") {
      fail(
        ErrorCode.CannotCreateIndex,
        `Error in specification ${describe} :: caused by :: Values in the index key pattern can only be non-zero numbers or strings.`,
      );
    }
    if (typeof value === "string" && !INDEX_TYPES.has(value))
      fail(ErrorCode.CannotCreateIndex, `Unknown index plugin '${value}'`);
  }
  if (typeof raw.name !== "string") {
    fail(
      ErrorCode.FailedToParse,
      `Error in specification ${describe} :: caused by :: The 'name' field is a required property of an index specification`,
    );
  }
  if (raw.name === "")
    fail(ErrorCode.CannotCreateIndex, `Error in specification ${describe} :: caused by :: index name cannot be empty`);
  if (raw.collation !== undefined && !(isDocument(raw.collation) && raw.collation.locale === "simple")) {
    fail(ErrorCode.BadValue, "collations are not supported by the wire-protocol test server");
  }
  const isIdIndex = Object.keys(key).length === 1 && Object.hasOwn(key, "_id");
  const spec: Doc = { v: new BSON.Int32(2), key, name: raw.name };
  if (raw.unique !== undefined && isTruthy(raw.unique) && !isIdIndex) spec.unique = true;
  if (raw.sparse !== undefined && isTruthy(raw.sparse)) spec.sparse = true;
  if (raw.partialFilterExpression !== undefined) {
    if (!isDocument(raw.partialFilterExpression))
      fail(ErrorCode.TypeMismatch, "The field 'partialFilterExpression' must be an object");
    compileFilter(raw.partialFilterExpression);
    spec.partialFilterExpression = raw.partialFilterExpression;
  }
  if (raw.expireAfterSeconds !== undefined) {
    if (isIdIndex)
      fail(ErrorCode.InvalidOptions, "The field 'expireAfterSeconds' is not valid for an _id index specification.");
    if (Object.keys(key).length > 1) {
      fail(
        ErrorCode.CannotCreateIndex,
        `TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: ${describe}`,
      );
    }
    const seconds = isNumeric(raw.expireAfterSeconds) ? toDouble(raw.expireAfterSeconds) : Number.NaN;
    if (!Number.isFinite(seconds) || seconds < 0 || seconds > MAX_EXPIRE_AFTER_SECONDS) {
      fail(
        ErrorCode.CannotCreateIndex,
        `TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number. Index spec: ${describe}`,
      );
    }
    spec.expireAfterSeconds = raw.expireAfterSeconds;
  }
  for (const [field, value] of Object.entries(raw)) {
    if (!(field in spec) && !["v", "unique", "sparse", "background", "ns"].includes(field)) spec[field] = value;
  }
  return spec;
}

/** Two specs are the same index (createIndexes is then a no-op). */
export function sameIndexOptions(a: Doc, b: Doc): boolean {
  const option = (spec: Doc, field: string): Doc => (spec[field] === undefined ? {} : { v: spec[field] });
  return (
    ["unique", "sparse", "partialFilterExpression", "collation", "hidden"].every((field) =>
      sameBytes(option(a, field), option(b, field)),
    ) &&
    (a.expireAfterSeconds === undefined) === (b.expireAfterSeconds === undefined) &&
    (a.expireAfterSeconds === undefined || toDouble(a.expireAfterSeconds) === toDouble(b.expireAfterSeconds))
  );
}

export function sameKeyPattern(a: Doc, b: Doc): boolean {
  return sameBytes(a.key as Doc, b.key as Doc);
}

/** One value of the next key field, and the subtree of the documents holding it. */
export interface KeyChild {
  readonly value: unknown;
  readonly canonical: string;
  readonly node: KeyNode;
}

/**
 * One level of an index's key tree: the documents under this key prefix, and the next field's values,
 * by canonical key (equality) and in key order (ranges). `next` is made with the first child: the nodes
 * of the last key field (most of them) never have one.
 */
export interface KeyNode {
  readonly ids: Set<string>;
  next?: { readonly byKey: Map<string, KeyChild>; readonly ordered: SortedKeys<KeyChild> };
}

function newNode(): KeyNode {
  return { ids: new Set() };
}

const NO_CHILDREN: readonly KeyChild[] = [];

/** The children of `node` in key order, from the first one that is not `before`. */
export function childrenFrom(node: KeyNode, before: (child: KeyChild) => boolean): Iterable<KeyChild> {
  return node.next ? node.next.ordered.from(before) : NO_CHILDREN;
}

/** A marker for the key an empty array produces (mongod indexes `[]` as undefined, not null). */
const EMPTY_ARRAY_KEY = Symbol("empty array");

export class Index {
  readonly spec: Doc;
  readonly name: string;
  readonly keyPattern: Doc;
  readonly unique: boolean;
  readonly expireAfterSeconds: number | undefined;
  readonly fields: { name: string; parts: string[] }[];
  private readonly partial: DocPredicate | undefined;
  /** Every key, field by field (for the planner). */
  readonly tree: KeyNode = newNode();
  readonly sparse: boolean;

  constructor(spec: Doc) {
    this.spec = spec;
    this.name = spec.name as string;
    this.keyPattern = spec.key as Doc;
    this.fields = Object.keys(this.keyPattern).map((name) => ({ name, parts: splitPath(name) }));
    this.unique = spec.unique === true || this.name === "_id_";
    this.sparse = spec.sparse === true;
    this.partial = spec.partialFilterExpression ? compileFilter(spec.partialFilterExpression) : undefined;
    this.expireAfterSeconds = spec.expireAfterSeconds === undefined ? undefined : toDouble(spec.expireAfterSeconds);
  }

  /** Whether a document has entries in this index at all (sparse and partial indexes skip some). */
  covers(doc: Doc): boolean {
    return this.partial ? this.partial(doc) : true;
  }

  /** The keys the index holds for `doc` (several for array fields: a multikey index). */
  keysFor(doc: Doc): IndexKey[] {
    if (!this.covers(doc)) return [];
    let allMissing = true;
    const perField = this.fields.map(({ parts }) => {
      const values: unknown[] = [];
      someValueAtPath(doc, parts, (leaf) => {
        if (leaf !== undefined) allMissing = false;
        if (Array.isArray(leaf)) values.push(...(leaf.length === 0 ? [EMPTY_ARRAY_KEY] : leaf));
        else values.push(leaf === undefined ? null : leaf);
        return false;
      });
      return values.length === 0 ? [null] : values;
    });
    if (this.sparse && allMissing) return [];
    const keys = new Map<string, IndexKey>();
    const combine = (i: number, chosen: unknown[]): void => {
      if (i === perField.length) {
        const canonical = chosen.map((v) => (v === EMPTY_ARRAY_KEY ? "undefined" : canonicalKey(v))).join("|");
        keys.set(canonical, { canonical, values: chosen.map((v) => (v === EMPTY_ARRAY_KEY ? undefined : v)) });
        return;
      }
      for (const value of perField[i] as unknown[]) combine(i + 1, [...chosen, value]);
    };
    combine(0, []);
    return [...keys.values()];
  }

  /** The first key of `doc` already held by another document, if this is a unique index. */
  findConflict(doc: Doc, ownId: string | undefined): IndexKey | undefined {
    if (!this.unique) return undefined;
    for (const key of this.keysFor(doc)) {
      // The tree's node at the full key holds the documents with that key.
      let node: KeyNode | undefined = this.tree;
      for (const value of key.values) node = node?.next?.byKey.get(keyPart(value))?.node;
      if (node && [...node.ids].some((id) => id !== ownId)) return key;
    }
    return undefined;
  }

  add(doc: Doc, id: string): void {
    const keys = this.keysFor(doc);
    for (const key of keys) {
      let node = this.tree;
      node.ids.add(id);
      for (const value of key.values) {
        const canonical = keyPart(value);
        const next = (node.next ??= { byKey: new Map(), ordered: new SortedKeys() });
        let child = next.byKey.get(canonical);
        if (!child) {
          child = { value, canonical, node: newNode() };
          next.byKey.set(canonical, child);
          next.ordered.insert(child);
        }
        node = child.node;
        node.ids.add(id);
      }
    }
  }

  /**
   * TTL: the documents holding a date before `cutoff` in this (single-field) index, found in key order.
   * An array of dates is indexed under each of them, so it is found by its earliest, as mongod expires it.
   */
  idsWithDateBefore(cutoff: number): Set<string> {
    const ids = new Set<string>();
    const dateOrder = canonicalTypeOrder(new Date(0));
    for (const { value, node } of childrenFrom(this.tree, (e) => canonicalTypeOrder(e.value) < dateOrder)) {
      if (!(value instanceof Date) || value.getTime() >= cutoff) break;
      node.ids.forEach((id) => ids.add(id));
    }
    return ids;
  }

  remove(doc: Doc, id: string): void {
    const keys = this.keysFor(doc);
    for (const key of keys) removeFromTree(this.tree, key.values, 0, id);
  }

  /** mongod's E11000 error for `key`, with the keyPattern / keyValue fields the driver exposes. */
  duplicateKeyError(ns: string, key: IndexKey): CommandError {
    const keyValue: Doc = {};
    this.fields.forEach(({ name }, i) => {
      keyValue[name] = key.values[i];
    });
    const shown = Object.entries(keyValue)
      .map(([name, value]) => `${name}: ${formatValue(value)}`)
      .join(", ");
    return new CommandError(
      ErrorCode.DuplicateKey,
      `E11000 duplicate key error collection: ${ns} index: ${this.name} dup key: { ${shown} }`,
      {
        keyPattern: this.keyPattern,
        keyValue,
      },
    );
  }
}

/** One key field's value as the tree stores it (`undefined`: the key of an empty array). */
function keyPart(value: unknown): string {
  return value === undefined ? "undefined" : canonicalKey(value);
}

function removeFromTree(node: KeyNode, values: readonly unknown[], depth: number, id: string): void {
  node.ids.delete(id);
  if (depth === values.length) return;
  const value = values[depth];
  const canonical = keyPart(value);
  const child = node.next?.byKey.get(canonical);
  if (!child) return;
  removeFromTree(child.node, values, depth + 1, id);
  if (child.node.ids.size === 0) {
    node.next!.byKey.delete(canonical);
    node.next!.ordered.remove(child);
  }
}

export function idIndexSpec(): Doc {
  return { v: new BSON.Int32(2), key: { _id: new BSON.Int32(1) }, name: "_id_" };
}

/** Checks `_id` like mongod does before storing a document. */
export function validateId(id: unknown): void {
  const type = bsonTypeName(id);
  if (type === "array") fail(ErrorCode.InvalidIdField, "The '_id' value cannot be of type array");
  if (type === "regex") fail(ErrorCode.BadValue, "can't use a regex for _id");
  if (type === "undefined") fail(ErrorCode.BadValue, "can't use a undefined for _id");
}
