// The document an upsert inserts when nothing matched: the query's equality conditions, then the update
// (update-operators.ts) applied to them as to an insert.

import { BSON } from "mongodb";
import { cloneValue, isDocument, isRegex, withIdFirst, type Doc } from "./bson-values.js";
import { isPathPrefix, splitPath, writeAtPath } from "./document-paths.js";
import { ErrorCode, fail } from "./errors.js";
import type { CompiledUpdate } from "./update-operators.js";

/**
 * The document an upsert starts from: the query's equality conditions ({a: 1}, {"b.c": 2},
 * {d: {$eq: 3}}, also inside $and), like mongod.
 */
export function upsertSeed(filter: unknown): Doc {
  const seed: Doc = {};
  const assigned: string[][] = [];
  const collect = (clause: unknown): void => {
    if (!isDocument(clause)) return;
    for (const [key, condition] of Object.entries(clause)) {
      if (key === "$and" && Array.isArray(condition)) {
        condition.forEach(collect);
        continue;
      }
      if (key.startsWith("$")) continue;
      let value: unknown;
      if (isDocument(condition) && Object.keys(condition)[0]?.startsWith("$")) {
        if (!Object.hasOwn(condition, "$eq")) continue;
        value = condition.$eq;
      } else if (isRegex(condition)) {
        continue;
      } else {
        value = condition;
      }
      const path = splitPath(key);
      if (assigned.some((other) => isPathPrefix(other, path) || isPathPrefix(path, other))) {
        fail(ErrorCode.NotSingleValueField, `cannot infer query fields to set, path '${key}' is matched twice`);
      }
      assigned.push(path);
      writeAtPath(seed, path, cloneValue(value));
    }
  };
  collect(filter);
  return seed;
}

/** The document an upsert inserts when nothing matched `filter`. */
export function buildUpsertDocument(filter: unknown, update: CompiledUpdate): Doc {
  const seed = upsertSeed(filter);
  let doc: Doc;
  if (update.isReplacement) {
    // A replacement upsert takes only `_id` from the query.
    doc = update.apply({}, { isInsert: true });
    if (!Object.hasOwn(doc, "_id") && Object.hasOwn(seed, "_id")) doc = { _id: seed._id, ...doc };
  } else {
    doc = update.apply(seed, { isInsert: true });
  }
  if (!Object.hasOwn(doc, "_id")) doc = { _id: new BSON.ObjectId(), ...doc };
  return withIdFirst(doc);
}
