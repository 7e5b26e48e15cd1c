// Update documents: replacement documents and the update operators ($set, $unset, $inc, $mul,
// $min, $max, $currentDate, $rename, $setOnInsert, $push with $each/$slice/$sort/$position,
// $addToSet, $pull, $pullAll, $pop). The document an upsert inserts is upsert-document.ts.
//
// An update is compiled (and fully validated) first, then applied to a private copy of the
// document; the caller stores the copy only if everything succeeded, so a failing update never
// leaves a half-applied document behind.

import { BSON } from "mongodb";
import {
  addNumbers,
  bsonTypeName,
  cloneDocument,
  cloneValue,
  formatValue,
  integerValue,
  isDocument,
  isNumeric,
  multiplyNumbers,
  sameBytes,
  withIdFirst,
  zeroLike,
  type Doc,
} from "./bson-values.js";
import { compareValues, valuesEqual } from "./bson-compare.js";
import { comparePaths, getAtPath, isPathPrefix, splitPath, unsetAtPath, writeAtPath } from "./document-paths.js";
import { ErrorCode, fail } from "./errors.js";
import { compileValueCondition } from "./query-matcher.js";
import { compileSort } from "./sort.js";

export interface CompiledUpdate {
  readonly isReplacement: boolean;
  /** Returns the updated copy of `doc` (never modifies `doc`). */
  apply(doc: Doc, options: { isInsert: boolean }): Doc;
}

interface FieldUpdate {
  operator: string;
  path: string[];
  apply(doc: Doc, original: Doc): void;
}

export function compileUpdate(update: unknown): CompiledUpdate {
  if (Array.isArray(update)) {
    fail(ErrorCode.BadValue, "pipeline-style updates are not supported by the wire-protocol test server");
  }
  if (!isDocument(update)) fail(ErrorCode.FailedToParse, "Update argument must be either an object or an array");
  const keys = Object.keys(update);
  if (keys.length > 0 && (keys[0] as string).startsWith("$")) return compileOperatorUpdate(update);
  return compileReplacement(update);
}

function compileReplacement(replacement: Doc): CompiledUpdate {
  for (const key of Object.keys(replacement)) {
    if (key.startsWith("$")) {
      fail(
        ErrorCode.DollarPrefixedFieldName,
        `The dollar ($) prefixed field '${key}' in '${key}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.`,
      );
    }
  }
  return {
    isReplacement: true,
    apply(doc, { isInsert }) {
      const next = cloneDocument(replacement);
      if (!isInsert && Object.hasOwn(doc, "_id")) {
        if (Object.hasOwn(next, "_id") && !sameBytes({ _id: next._id }, { _id: doc._id })) {
          fail(
            ErrorCode.ImmutableField,
            `After applying the update, the (immutable) field '_id' was found to have been altered to _id: ${formatValue(next._id)}`,
          );
        }
        return withIdFirst({ ...next, _id: cloneValue(doc._id) });
      }
      return next;
    },
  };
}

const OPERATORS = new Set([
  "$set",
  "$unset",
  "$inc",
  "$mul",
  "$min",
  "$max",
  "$currentDate",
  "$rename",
  "$setOnInsert",
  "$push",
  "$addToSet",
  "$pull",
  "$pullAll",
  "$pop",
]);

function compileOperatorUpdate(update: Doc): CompiledUpdate {
  const fieldUpdates: FieldUpdate[] = [];
  for (const [operator, fields] of Object.entries(update)) {
    if (!OPERATORS.has(operator)) {
      fail(
        ErrorCode.FailedToParse,
        `Unknown modifier: ${operator}. Expected a valid update modifier or pipeline-style update specified as an array`,
      );
    }
    if (!isDocument(fields)) {
      fail(
        ErrorCode.FailedToParse,
        `Modifiers operate on fields but we found type ${bsonTypeName(fields)} instead. For example: {$mod: {<field>: ...}} not {${operator}: ${formatValue(fields)}}`,
      );
    }
    for (const [pathText, argument] of Object.entries(fields)) {
      fieldUpdates.push(...compileFieldUpdate(operator, pathText, argument));
    }
  }
  // mongod keeps update paths in a tree ordered by field name: new fields are created in that
  // order, and two paths where one is a prefix of (or equal to) the other conflict.
  fieldUpdates.sort((a, b) => comparePaths(a.path, b.path));
  for (let i = 1; i < fieldUpdates.length; i++) {
    const previous = (fieldUpdates[i - 1] as FieldUpdate).path;
    const current = (fieldUpdates[i] as FieldUpdate).path;
    if (isPathPrefix(previous, current)) {
      fail(
        ErrorCode.ConflictingUpdateOperators,
        `Updating the path '${current.join(".")}' would create a conflict at '${previous.join(".")}'`,
      );
    }
  }
  return {
    isReplacement: false,
    apply(doc, { isInsert }) {
      const next = cloneDocument(doc);
      for (const fieldUpdate of fieldUpdates) {
        if (fieldUpdate.operator === "$setOnInsert" && !isInsert) continue;
        fieldUpdate.apply(next, doc);
      }
      if (!isInsert && !sameBytes({ _id: next._id }, { _id: doc._id })) {
        fail(ErrorCode.ImmutableField, "Performing an update on the path '_id' would modify the immutable field '_id'");
      }
      return withIdFirst(next);
    },
  };
}

function validatePath(pathText: string): string[] {
  if (pathText === "") fail(ErrorCode.EmptyFieldName, "An empty update path is not valid.");
  const path = splitPath(pathText);
  if (path.some((part) => part === ""))
    fail(ErrorCode.EmptyFieldName, `The update path '${pathText}' contains an empty field name, which is not allowed.`);
  if (path.some((part) => part === "$" || part.startsWith("$["))) {
    fail(
      ErrorCode.BadValue,
      `positional update paths ('${pathText}') are not supported by the wire-protocol test server`,
    );
  }
  return path;
}

function describeId(doc: Doc): string {
  return `{_id: ${formatValue(doc._id)}}`;
}

function compileFieldUpdate(operator: string, pathText: string, argument: unknown): FieldUpdate[] {
  const path = validatePath(pathText);
  const field = path[path.length - 1] as string;
  const make = (apply: FieldUpdate["apply"]): FieldUpdate[] => [{ operator, path, apply }];

  switch (operator) {
    case "$set":
    case "$setOnInsert":
      return make((doc) => writeAtPath(doc, path, cloneValue(argument)));
    case "$unset":
      return make((doc) => unsetAtPath(doc, path));
    case "$inc":
    case "$mul": {
      const verb = operator === "$inc" ? "increment" : "multiply";
      if (!isNumeric(argument))
        fail(
          ErrorCode.TypeMismatch,
          `Cannot ${verb} with non-numeric argument: {${pathText}: ${formatValue(argument)}}`,
        );
      return make((doc, original) => {
        const current = getAtPath(doc, path);
        if (current === undefined) {
          writeAtPath(doc, path, operator === "$inc" ? cloneValue(argument) : zeroLike(argument));
          return;
        }
        if (!isNumeric(current)) {
          fail(
            ErrorCode.TypeMismatch,
            `Cannot apply ${operator} to a value of non-numeric type. ${describeId(original)} has the field '${field}' of non-numeric type ${bsonTypeName(current)}`,
          );
        }
        writeAtPath(
          doc,
          path,
          operator === "$inc" ? addNumbers(current, argument) : multiplyNumbers(current, argument),
        );
      });
    }
    case "$min":
    case "$max":
      return make((doc) => {
        const current = getAtPath(doc, path);
        const c = current === undefined ? 0 : compareValues(argument, current);
        if (current === undefined || (operator === "$min" ? c < 0 : c > 0))
          writeAtPath(doc, path, cloneValue(argument));
      });
    case "$currentDate": {
      let type = "date";
      if (isDocument(argument)) {
        const keys = Object.keys(argument);
        if (keys.length !== 1 || keys[0] !== "$type" || (argument.$type !== "date" && argument.$type !== "timestamp")) {
          fail(
            ErrorCode.BadValue,
            "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}",
          );
        }
        type = argument.$type as string;
      } else if (typeof argument !== "boolean") {
        fail(
          ErrorCode.BadValue,
          `${bsonTypeName(argument)} is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'}).`,
        );
      }
      return make((doc) => writeAtPath(doc, path, type === "date" ? new Date() : currentTimestamp()));
    }
    case "$rename": {
      if (typeof argument !== "string")
        fail(ErrorCode.BadValue, `The 'to' field for $rename must be a string: ${pathText}: ${formatValue(argument)}`);
      const target = validatePath(argument);
      if (pathText === argument)
        fail(ErrorCode.BadValue, `The source and target field for $rename must differ: ${pathText}: "${argument}"`);
      return [
        {
          operator,
          path,
          apply(doc) {
            const value = getAtPath(doc, path);
            if (value === undefined) return;
            unsetAtPath(doc, path);
            writeAtPath(doc, target, value);
          },
        },
        // Registered under the target path too, so that conflicts with it are detected.
        { operator, path: target, apply() {} },
      ];
    }
    case "$push":
      return make(compilePush(path, field, argument));
    case "$addToSet": {
      const values = eachArgument(argument, "$addToSet");
      return make((doc) => {
        const current = getAtPath(doc, path);
        if (current !== undefined && !Array.isArray(current)) {
          fail(
            ErrorCode.BadValue,
            `Cannot apply $addToSet to non-array field. Field named '${field}' has non-array type ${bsonTypeName(current)}`,
          );
        }
        const array = [...((current as unknown[] | undefined) ?? [])];
        for (const value of values)
          if (!array.some((element) => valuesEqual(element, value))) array.push(cloneValue(value));
        writeAtPath(doc, path, array);
      });
    }
    case "$pull":
    case "$pullAll": {
      let remove: (element: unknown) => boolean;
      if (operator === "$pullAll") {
        if (!Array.isArray(argument))
          fail(ErrorCode.BadValue, `$pullAll requires an array argument but was given a ${bsonTypeName(argument)}`);
        remove = (element) => argument.some((value) => valuesEqual(element, value));
      } else {
        remove = compileValueCondition(argument, true);
      }
      return make((doc) => {
        const current = getAtPath(doc, path);
        if (current === undefined) return;
        if (!Array.isArray(current)) fail(ErrorCode.BadValue, "Cannot apply $pull to a non-array value");
        const kept = current.filter((element) => !remove(element));
        if (kept.length !== current.length) writeAtPath(doc, path, kept);
      });
    }
    case "$pop": {
      const direction = integerValue(argument);
      if (direction !== 1 && direction !== -1)
        fail(ErrorCode.FailedToParse, `$pop expects 1 or -1, found: ${formatValue(argument)}`);
      return make((doc) => {
        const current = getAtPath(doc, path);
        if (current === undefined) return;
        if (!Array.isArray(current))
          fail(
            ErrorCode.TypeMismatch,
            `Path '${pathText}' contains an element of non-array type '${bsonTypeName(current)}'`,
          );
        if (current.length > 0) writeAtPath(doc, path, direction === 1 ? current.slice(0, -1) : current.slice(1));
      });
    }
    default:
      return fail(ErrorCode.FailedToParse, `Unknown modifier: ${operator}`);
  }
}

let lastTimestampSecond = 0;
let timestampIncrement = 0;

/** $currentDate {$type: "timestamp"}: unique, increasing, like an oplog time. */
function currentTimestamp(): BSON.Timestamp {
  const seconds = Math.floor(Date.now() / 1000);
  timestampIncrement = seconds === lastTimestampSecond ? timestampIncrement + 1 : 1;
  lastTimestampSecond = seconds;
  return new BSON.Timestamp({ t: seconds, i: timestampIncrement });
}

function eachArgument(argument: unknown, operator: string): unknown[] {
  if (!isDocument(argument) || !Object.hasOwn(argument, "$each")) return [argument];
  const extra = Object.keys(argument).filter((key) => key !== "$each");
  if (extra.length > 0)
    fail(ErrorCode.BadValue, `Found unexpected fields after $each in ${operator}: ${formatValue(argument)}`);
  if (!Array.isArray(argument.$each)) {
    fail(
      ErrorCode.TypeMismatch,
      `The argument to $each in ${operator} must be an array but it was of type ${bsonTypeName(argument.$each)}`,
    );
  }
  return argument.$each;
}

const PUSH_CLAUSES = new Set(["$each", "$slice", "$sort", "$position"]);

function compilePush(path: string[], field: string, argument: unknown): FieldUpdate["apply"] {
  let each: unknown[] = [argument];
  let slice: number | undefined;
  let position: number | undefined;
  let sort: ((a: unknown, b: unknown) => number) | undefined;

  if (isDocument(argument) && Object.hasOwn(argument, "$each")) {
    for (const key of Object.keys(argument)) {
      if (!PUSH_CLAUSES.has(key)) fail(ErrorCode.BadValue, `Unrecognized clause in $push: ${key}`);
    }
    if (!Array.isArray(argument.$each)) {
      fail(
        ErrorCode.BadValue,
        `The argument to $each in $push must be an array but it was of type: ${bsonTypeName(argument.$each)}`,
      );
    }
    each = argument.$each;
    if (argument.$slice !== undefined) {
      slice = integerValue(argument.$slice);
      if (slice === undefined)
        fail(
          ErrorCode.BadValue,
          `The value for $slice must be an integral value, but found type: ${bsonTypeName(argument.$slice)}`,
        );
    }
    if (argument.$position !== undefined) {
      position = integerValue(argument.$position);
      if (position === undefined)
        fail(
          ErrorCode.BadValue,
          `The value for $position must be an integer value, not of type: ${bsonTypeName(argument.$position)}`,
        );
    }
    if (argument.$sort !== undefined) sort = compilePushSort(argument.$sort);
  }

  return (doc, original) => {
    const current = getAtPath(doc, path);
    if (current !== undefined && !Array.isArray(current)) {
      fail(
        ErrorCode.BadValue,
        `The field '${field}' must be an array but is of type ${bsonTypeName(current)} in document ${describeId(original)}`,
      );
    }
    const array = [...((current as unknown[] | undefined) ?? [])];
    let at = position ?? array.length;
    if (at < 0) at = Math.max(0, array.length + at);
    array.splice(Math.min(at, array.length), 0, ...each.map(cloneValue));
    if (sort) array.sort(sort);
    const result =
      slice === undefined ? array : slice >= 0 ? array.slice(0, slice) : array.slice(Math.max(0, array.length + slice));
    writeAtPath(doc, path, result);
  };
}

function compilePushSort(spec: unknown): (a: unknown, b: unknown) => number {
  const direction = integerValue(spec);
  if (direction === 1 || direction === -1) return (a, b) => compareValues(a, b) * direction;
  if (isDocument(spec) && Object.keys(spec).length > 0) {
    const comparator = compileSort(spec);
    if (comparator) return (a, b) => comparator(isDocument(a) ? a : {}, isDocument(b) ? b : {});
  }
  return fail(
    ErrorCode.BadValue,
    "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields",
  );
}
