// Aggregation pipelines over a collection's documents: $match, $sort, $skip, $limit, $project,
// $addFields/$set, $unset, $group, $count, $unwind, $replaceRoot/$replaceWith.
// The whole pipeline is compiled (validated) before it runs.

import { BSON } from "mongodb";
import {
  addNumbers,
  cloneDocument,
  formatValue,
  integerValue,
  isDocument,
  isNumeric,
  toDouble,
  type Doc,
} from "./bson-values.js";
import { canonicalKey, compareValues } from "./bson-compare.js";
import { splitPath, writeAtPath } from "./document-paths.js";
import { ErrorCode, fail } from "./errors.js";
import { evaluateExpression, validateExpression } from "./expressions.js";
import { compileProjection } from "./projection.js";
import { compileFilter } from "./query-matcher.js";
import { compileSort, sortDocuments } from "./sort.js";

type Stage = (docs: Doc[]) => Doc[];

export function compilePipeline(pipeline: unknown): Stage {
  if (!Array.isArray(pipeline)) fail(ErrorCode.TypeMismatch, "'pipeline' option must be specified as an array");
  const stages = pipeline.map(compileStage);
  return (docs) => stages.reduce((current, stage) => stage(current), docs);
}

function compileStage(stage: unknown): Stage {
  if (!isDocument(stage) || Object.keys(stage).length !== 1) {
    fail(40323, "A pipeline stage specification object must contain exactly one field.");
  }
  const [name, spec] = Object.entries(stage)[0] as [string, unknown];
  switch (name) {
    case "$match": {
      if (!isDocument(spec)) fail(15959, "the match filter must be an expression in an object");
      const predicate = compileFilter(spec);
      return (docs) => docs.filter(predicate);
    }
    case "$sort": {
      if (!isDocument(spec) || Object.keys(spec).length === 0)
        fail(15976, "$sort stage must have at least one sort key");
      const comparator = compileSort(spec);
      return (docs) => sortDocuments(docs, comparator);
    }
    case "$skip": {
      const n = integerValue(spec);
      if (n === undefined) fail(15972, `Argument to $skip must be a number not a ${formatValue(spec)}`);
      if (n < 0) fail(15956, `Argument to $skip cannot be negative`);
      return (docs) => docs.slice(n);
    }
    case "$limit": {
      const n = integerValue(spec);
      if (n === undefined) fail(15957, `the limit must be specified as a number`);
      if (n <= 0) fail(15958, "the limit must be positive");
      return (docs) => docs.slice(0, n);
    }
    case "$project": {
      const projector = compileProjection(spec, "aggregate");
      return (docs) => (projector ? docs.map(projector) : docs);
    }
    case "$addFields":
    case "$set": {
      if (!isDocument(spec)) fail(40272, `${name} specification stage must be an object, got ${formatValue(spec)}`);
      Object.values(spec).forEach(validateExpression);
      return (docs) =>
        docs.map((doc) => {
          const out = cloneDocument(doc);
          for (const [path, expression] of Object.entries(spec)) {
            const value = evaluateExpression(expression, doc);
            if (value !== undefined) writeAtPath(out, splitPath(path), value);
          }
          return out;
        });
    }
    case "$unset": {
      const fields = typeof spec === "string" ? [spec] : spec;
      if (!Array.isArray(fields) || fields.some((field) => typeof field !== "string")) {
        fail(31002, "$unset specification must be a string or an array containing only string values");
      }
      const projector = compileProjection(Object.fromEntries(fields.map((field) => [field, 0])), "aggregate");
      return (docs) => (projector ? docs.map(projector) : docs);
    }
    case "$group":
      return compileGroup(spec);
    case "$count": {
      if (typeof spec !== "string" || spec === "") fail(40156, "the count field must be a non-empty string");
      if (spec.startsWith("$")) fail(40158, "the count field cannot be a $-prefixed path");
      if (spec.includes(".")) fail(40160, "the count field cannot contain '.'");
      // Like mongod, $count over no documents outputs no document at all.
      return (docs) => (docs.length === 0 ? [] : [{ [spec]: new BSON.Int32(docs.length) }]);
    }
    case "$unwind":
      return compileUnwind(spec);
    case "$replaceRoot":
    case "$replaceWith": {
      const expression = name === "$replaceRoot" ? (isDocument(spec) ? spec.newRoot : undefined) : spec;
      if (expression === undefined) fail(40231, "no newRoot specified for the $replaceRoot stage");
      validateExpression(expression);
      return (docs) =>
        docs.map((doc) => {
          const root = evaluateExpression(expression, doc);
          if (!isDocument(root)) {
            fail(
              40228,
              `'newRoot' expression must evaluate to an object, but resulting value was: ${formatValue(root)}. Type of resulting value: '${typeof root}'.`,
            );
          }
          return root;
        });
    }
    case "$changeStream":
      return fail(40573, "The $changeStream stage is only supported on replica sets");
    default:
      return fail(40324, `Unrecognized pipeline stage name: '${name}'`);
  }
}

// ---------------------------------------------------------------------------------------
// $group

type Accumulator = { add(value: unknown): void; result(): unknown };

const ACCUMULATORS: Record<string, () => Accumulator> = {
  $sum: () => {
    // Non-numeric values are ignored; the result keeps the narrowest type that holds it.
    let total: unknown = new BSON.Int32(0);
    return { add: (v) => void (isNumeric(v) && (total = addNumbers(total, v))), result: () => total };
  },
  $avg: () => {
    let total = 0;
    let count = 0;
    return {
      add: (v) => {
        if (isNumeric(v)) {
          total += toDouble(v);
          count++;
        }
      },
      result: () => (count === 0 ? null : new BSON.Double(total / count)),
    };
  },
  $min: () => extremum(-1),
  $max: () => extremum(1),
  $first: () => {
    let seen = false;
    let first: unknown = null;
    return {
      add: (v) => {
        if (!seen) first = v === undefined ? null : v;
        seen = true;
      },
      result: () => first,
    };
  },
  $last: () => {
    let last: unknown = null;
    return { add: (v) => void (last = v === undefined ? null : v), result: () => last };
  },
  $push: () => {
    const values: unknown[] = [];
    return { add: (v) => void (v !== undefined && values.push(v)), result: () => values };
  },
  $addToSet: () => {
    const values = new Map<string, unknown>();
    return {
      add: (v) => void (v !== undefined && !values.has(canonicalKey(v)) && values.set(canonicalKey(v), v)),
      result: () => [...values.values()],
    };
  },
  $count: () => {
    let n = 0;
    return { add: () => void n++, result: () => new BSON.Int32(n) };
  },
};

/** $min / $max ignore null and missing values; with nothing left the result is null. */
function extremum(direction: 1 | -1): Accumulator {
  let best: unknown = undefined;
  return {
    add: (v) => {
      if (v === undefined || v === null) return;
      if (best === undefined || compareValues(v, best) * direction > 0) best = v;
    },
    result: () => (best === undefined ? null : best),
  };
}

function compileGroup(spec: unknown): Stage {
  if (!isDocument(spec)) fail(15947, "a group's fields must be specified in an object");
  if (!Object.hasOwn(spec, "_id")) fail(15955, "a group specification must include an _id");
  validateExpression(spec._id);
  const fields = Object.entries(spec)
    .filter(([name]) => name !== "_id")
    .map(([name, definition]) => {
      if (name.includes(".")) fail(40235, `The field name '${name}' cannot contain '.'`);
      if (!isDocument(definition) || Object.keys(definition).length !== 1) {
        fail(40234, `The field '${name}' must be an accumulator object`);
      }
      const [operator, expression] = Object.entries(definition)[0] as [string, unknown];
      const make = ACCUMULATORS[operator];
      if (!make) fail(15952, `unknown group operator '${operator}'`);
      validateExpression(expression);
      return { name, make, expression };
    });

  return (docs) => {
    const groups = new Map<string, { id: unknown; accumulators: Accumulator[] }>();
    for (const doc of docs) {
      const idValue = evaluateExpression(spec._id, doc);
      const id = idValue === undefined ? null : idValue;
      const key = canonicalKey(id);
      let group = groups.get(key);
      if (!group) {
        group = { id, accumulators: fields.map((field) => field.make()) };
        groups.set(key, group);
      }
      fields.forEach((field, i) => group.accumulators[i]?.add(evaluateExpression(field.expression, doc)));
    }
    return [...groups.values()].map(({ id, accumulators }) => {
      const out: Doc = { _id: id };
      fields.forEach((field, i) => (out[field.name] = accumulators[i]?.result()));
      return out;
    });
  };
}

// ---------------------------------------------------------------------------------------
// $unwind

function compileUnwind(spec: unknown): Stage {
  const options = typeof spec === "string" ? { path: spec } : spec;
  if (!isDocument(options))
    fail(15981, `expected either a string or an object as specification for $unwind stage, got ${formatValue(spec)}`);
  const path = options.path;
  if (typeof path !== "string") fail(28812, "no path specified to $unwind stage");
  if (!path.startsWith("$")) fail(28818, `path option to $unwind stage should be prefixed with a '$': ${path}`);
  const parts = splitPath(path.slice(1));
  const preserve = options.preserveNullAndEmptyArrays === true;
  const indexField = options.includeArrayIndex;
  if (indexField !== undefined && (typeof indexField !== "string" || indexField === "" || indexField.startsWith("$"))) {
    fail(28822, "includeArrayIndex option to $unwind stage should be a non-empty string that does not start with '$'");
  }

  return (docs) =>
    docs.flatMap((doc) => {
      const value = evaluateExpression(path, doc);
      const emit = (element: unknown, index: unknown): Doc => {
        const out = cloneDocument(doc);
        if (element === undefined) removeAtPath(out, parts);
        else writeAtPath(out, parts, element);
        if (typeof indexField === "string") out[indexField] = index;
        return out;
      };
      if (Array.isArray(value)) {
        if (value.length === 0) return preserve ? [emit(undefined, null)] : [];
        return value.map((element, i) => emit(element, BSON.Long.fromNumber(i)));
      }
      if (value === undefined || value === null) return preserve ? [emit(value, null)] : [];
      // A non-array value unwinds as a one-element array.
      return [emit(value, null)];
    });
}

function removeAtPath(doc: Doc, parts: readonly string[]): void {
  let container: unknown = doc;
  for (const part of parts.slice(0, -1)) container = isDocument(container) ? container[part] : undefined;
  if (isDocument(container)) delete container[parts[parts.length - 1] as string];
}
