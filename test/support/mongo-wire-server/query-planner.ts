// A small query planner: picks the index whose key fields the filter pins down the furthest
// (equality or $in on a prefix, then a range, $ne or $nin on the next field), walks that
// index's key tree, and fetches only the documents under the matching keys. Without a usable
// index it scans the collection, as mongod does (COLLSCAN). Either way the caller still applies
// the whole filter, so a plan changes only what is examined, never the result; candidates come
// back in natural order, the order a scan would give.
//
// What every plan examined is added to the store's query statistics (serverStatus
// `metrics.queryExecutor`), and `explain` reports the plan, so tests can prove that the queries
// the product issues are served by an index.

import { canonicalTypeOrder, isDocument, isRegex, sameBytes, type Doc } from "./bson-values.js";
import { canonicalKey, compareValues, valuesEqual } from "./bson-compare.js";
import type { Collection, Store } from "./collection-store.js";
import { childrenFrom, type Index, type KeyNode } from "./indexes.js";

/**
 * What a filter says about one field that an index can use. A range from $gt/$gte/$lt/$lte also names
 * its bound, so the plan can seek to where it starts in key order ($ne, $nin test every key).
 */
type FieldBound =
  { kind: "eq"; values: unknown[] } | { kind: "range"; test: (value: unknown) => boolean; lower?: LowerBound };

/** Where a $gt/$gte/$lt/$lte range starts: at its value, or at the first value of its type. */
interface LowerBound {
  typeOrder: number;
  from?: { value: unknown; inclusive: boolean };
}

export interface QueryPlan {
  stage: "IXSCAN" | "COLLSCAN" | "EOF";
  indexName?: string;
  /** The documents the plan fetched (before the whole filter is applied), in natural order. */
  candidates: Doc[];
  keysExamined: number;
}

const RANGE_OPERATORS: Record<string, (order: number) => boolean> = {
  $gt: (order) => order > 0,
  $gte: (order) => order >= 0,
  $lt: (order) => order < 0,
  $lte: (order) => order <= 0,
};

function isScalar(value: unknown): boolean {
  return !Array.isArray(value) && !isDocument(value) && !isRegex(value) && value !== undefined;
}

function hasOperators(value: Doc): boolean {
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => key.startsWith("$"));
}

/** The bounds a filter puts on its top-level fields (and on those of its `$and` clauses). */
export function fieldBounds(filter: Doc | undefined): Map<string, FieldBound[]> {
  const bounds = new Map<string, FieldBound[]>();
  const add = (field: string, bound: FieldBound) => bounds.set(field, [...(bounds.get(field) ?? []), bound]);
  for (const [field, condition] of Object.entries(filter ?? {})) {
    if (field === "$and" && Array.isArray(condition)) {
      for (const clause of condition)
        if (isDocument(clause)) for (const [f, list] of fieldBounds(clause)) list.forEach((b) => add(f, b));
      continue;
    }
    if (field.startsWith("$")) continue;
    if (!isDocument(condition) || !hasOperators(condition)) {
      if (isScalar(condition)) add(field, { kind: "eq", values: [condition] });
      continue;
    }
    for (const [operator, argument] of Object.entries(condition)) {
      if (operator === "$eq" && isScalar(argument)) add(field, { kind: "eq", values: [argument] });
      else if (operator === "$in" && Array.isArray(argument) && argument.every(isScalar))
        add(field, { kind: "eq", values: argument });
      else if (operator in RANGE_OPERATORS && isScalar(argument)) {
        const holds = RANGE_OPERATORS[operator] as (order: number) => boolean;
        // Type bracketing: a range only matches values of the bound's type.
        const test = (value: unknown) =>
          canonicalTypeOrder(value) === canonicalTypeOrder(argument) && holds(compareValues(value, argument));
        const from =
          operator === "$gt" || operator === "$gte"
            ? { from: { value: argument, inclusive: operator === "$gte" } }
            : {};
        add(field, { kind: "range", test, lower: { typeOrder: canonicalTypeOrder(argument), ...from } });
      } else if (operator === "$ne" && isScalar(argument))
        add(field, { kind: "range", test: (value) => !valuesEqual(value, argument) });
      else if (operator === "$nin" && Array.isArray(argument) && argument.every(isScalar)) {
        add(field, { kind: "range", test: (value) => !argument.some((excluded) => valuesEqual(value, excluded)) });
      }
    }
  }
  return bounds;
}

/** Whether key `value` sorts before where a range starts. */
function startsBefore(value: unknown, lower: LowerBound): boolean {
  const typeOrder = canonicalTypeOrder(value);
  if (typeOrder !== lower.typeOrder || !lower.from) return typeOrder < lower.typeOrder;
  const order = compareValues(value, lower.from.value);
  return order < 0 || (order === 0 && !lower.from.inclusive);
}

/** A partial index answers a query only when the query repeats its filter expression. */
function impliesPartialFilter(filter: Doc | undefined, partial: Doc): boolean {
  return Object.entries(partial).every(([field, expected]) => {
    const condition = filter?.[field];
    if (!isDocument(expected))
      return condition !== undefined && isDocument(condition) === false && valuesEqual(condition, expected);
    if (!isDocument(condition)) return false;
    return Object.entries(expected).every(
      ([op, value]) => condition[op] !== undefined && sameBytes({ v: condition[op] }, { v: value }),
    );
  });
}

/** How far an index's key fields are pinned: equality fields count 2, a range on the next one 1. */
type RangeBound = Extract<FieldBound, { kind: "range" }>;

function rate(
  index: Index,
  bounds: Map<string, FieldBound[]>,
  filter: Doc | undefined,
): { score: number; eq: number; range?: RangeBound[] } {
  const partial = index.spec.partialFilterExpression;
  if (isDocument(partial) && !impliesPartialFilter(filter, partial)) return { score: 0, eq: 0 };
  let eq = 0;
  while (eq < index.fields.length && bounds.get(index.fields[eq]!.name)?.some((b) => b.kind === "eq")) eq++;
  const next = index.fields[eq];
  const ranges = next ? (bounds.get(next.name) ?? []).filter((b): b is RangeBound => b.kind === "range") : [];
  const range = ranges.length > 0 ? ranges : undefined;
  // A sparse index has no key for documents missing the field: usable only when the query cannot match them.
  if (index.sparse) {
    const first = bounds.get(index.fields[0]!.name) ?? [];
    if (!first.some((b) => (b.kind === "eq" ? b.values.every((v) => v !== null) : !b.test(null))))
      return { score: 0, eq: 0 };
  }
  return { score: eq * 2 + (range ? 1 : 0), eq, ...(range ? { range } : {}) };
}

/** Chooses a plan for `filter` on `collection` and fetches its candidates. */
export function planQuery(collection: Collection | undefined, filter: Doc | undefined): QueryPlan {
  if (!collection) return { stage: "EOF", candidates: [], keysExamined: 0 };
  const bounds = fieldBounds(filter);
  let best: { index: Index; score: number; eq: number; range?: RangeBound[] } | undefined;
  for (const index of collection.indexes) {
    const rating = rate(index, bounds, filter);
    if (
      rating.score > 0 &&
      (!best ||
        rating.score > best.score ||
        (rating.score === best.score && index.fields.length < best.index.fields.length))
    )
      best = { index, ...rating };
  }
  if (!best) return { stage: "COLLSCAN", candidates: collection.all(), keysExamined: 0 };

  const { index, eq, range } = best;
  let keysExamined = 0;
  const ids = new Set<string>();
  const walk = (node: KeyNode, depth: number): void => {
    if (depth === eq) {
      if (!range) {
        keysExamined += node.ids.size;
        node.ids.forEach((id) => ids.add(id));
        return;
      }
      // $gt/$gte/$lt/$lte seek to where they start in key order and stop at the first key past their
      // end (their type's values are contiguous there); $ne and $nin only filter the keys read.
      const intervals = range.filter((r) => r.lower !== undefined);
      const filters = range.filter((r) => r.lower === undefined);
      for (const { value, node: child } of childrenFrom(node, (e) =>
        intervals.some((r) => startsBefore(e.value, r.lower!)),
      )) {
        keysExamined++;
        if (intervals.some((r) => !r.test(value))) break;
        if (filters.every((r) => r.test(value))) child.ids.forEach((id) => ids.add(id));
      }
      return;
    }
    const field = index.fields[depth]!.name;
    const values = (bounds.get(field)?.find((b) => b.kind === "eq") as { values: unknown[] }).values;
    for (const value of values) {
      const child = node.next?.byKey.get(canonicalKey(value))?.node;
      keysExamined++;
      if (child) walk(child, depth + 1);
    }
  };
  walk(index.tree, 0);
  const fetched = [...ids].map((id) => collection.byCanonicalId(id)).filter((entry) => entry !== undefined);
  fetched.sort((a, b) => a.position - b.position);
  return { stage: "IXSCAN", indexName: index.name, candidates: fetched.map((entry) => entry.doc), keysExamined };
}

/** The documents of `collection` matching `filter` (through `predicate`), counted in the store's query statistics. */
export function matchingDocuments(
  store: Store,
  collection: Collection | undefined,
  filter: Doc | undefined,
  predicate: (doc: Doc) => boolean,
): Doc[] {
  const plan = planQuery(collection, filter);
  store.queryStats.scanned += plan.keysExamined;
  store.queryStats.scannedObjects += plan.candidates.length;
  if (plan.stage === "COLLSCAN") store.queryStats.collectionScans++;
  return plan.candidates.filter(predicate);
}
