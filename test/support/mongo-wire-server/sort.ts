// Sort specifications ({a: 1, "b.c": -1}) with MongoDB's sort-key rules.

import { integerValue, isDocument, isNumeric, formatValue, type Doc } from "./bson-values.js";
import { compareValues } from "./bson-compare.js";
import { splitPath, valuesAtPath } from "./document-paths.js";
import { ErrorCode, fail } from "./errors.js";

export type DocComparator = (a: Doc, b: Doc) => number;

/** Returns undefined for an empty or absent spec (natural order). */
export function compileSort(spec: unknown): DocComparator | undefined {
  if (spec === undefined || spec === null) return undefined;
  if (!isDocument(spec)) fail(ErrorCode.TypeMismatch, "sort must be an object");
  const keys = Object.entries(spec).map(([path, direction]) => {
    if (isDocument(direction) && Object.hasOwn(direction, "$meta")) {
      fail(ErrorCode.BadValue, "$meta sort is not supported by the wire-protocol test server");
    }
    if (!isNumeric(direction)) fail(15974, `Illegal key in $sort specification: ${path}: ${formatValue(direction)}`);
    const n = integerValue(direction);
    if (n !== 1 && n !== -1) fail(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)");
    return { parts: splitPath(path), direction: n };
  });
  if (keys.length === 0) return undefined;
  return (a, b) => {
    for (const { parts, direction } of keys) {
      const c = compareValues(sortKey(a, parts, direction), sortKey(b, parts, direction));
      if (c !== 0) return c * direction;
    }
    return 0;
  };
}

/**
 * The value a document sorts by: for arrays mongod uses the smallest element when sorting
 * ascending and the largest when descending; a missing field sorts like null.
 */
function sortKey(doc: Doc, parts: readonly string[], direction: number): unknown {
  const values = valuesAtPath(doc, parts);
  let best: unknown = undefined;
  let first = true;
  for (const raw of values) {
    const value = raw === undefined ? null : raw;
    if (first || compareValues(value, best) * direction < 0) best = value;
    first = false;
  }
  return first ? null : best;
}

/** A stable sort (ties keep their natural order, as they usually do in mongod). */
export function sortDocuments(docs: Doc[], comparator: DocComparator | undefined): Doc[] {
  return comparator ? [...docs].sort(comparator) : docs;
}
