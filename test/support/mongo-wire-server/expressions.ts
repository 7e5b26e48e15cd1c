// A small subset of aggregation expressions: field paths ("$a.b"), system variables, literals,
// and the common operators. Used by $group, $project/$addFields, computed find projections and
// $expr. Unknown operators fail like mongod (InvalidPipelineOperator) rather than guessing.

import { BSON } from "mongodb";
import { addNumbers, bsonTypeName, isDocument, isNumeric, multiplyNumbers, toDouble, type Doc } from "./bson-values.js";
import { compareValues } from "./bson-compare.js";
import { splitPath } from "./document-paths.js";
import { ErrorCode, fail } from "./errors.js";

/** mongod's truthiness for expression results: false, null, missing and 0 are false. */
export function expressionIsTrue(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (isNumeric(value)) return toDouble(value) !== 0;
  return true;
}

/** "$a.b" on a value: arrays met along the way map the rest of the path over their elements. */
function resolveFieldPath(value: unknown, parts: readonly string[], depth = 0): unknown {
  if (depth === parts.length) return value;
  const part = parts[depth] as string;
  if (isDocument(value)) {
    return Object.hasOwn(value, part) ? resolveFieldPath(value[part], parts, depth + 1) : undefined;
  }
  if (Array.isArray(value)) {
    const results: unknown[] = [];
    for (const element of value) {
      if (!isDocument(element) && !Array.isArray(element)) continue;
      const resolved = resolveFieldPath(element, parts, depth);
      if (resolved !== undefined) results.push(resolved);
    }
    return results;
  }
  return undefined;
}

function evaluateVariable(reference: string, root: Doc): unknown {
  const [name = "", ...rest] = splitPath(reference);
  let value: unknown;
  switch (name) {
    case "ROOT":
    case "CURRENT":
      value = root;
      break;
    case "NOW":
      value = new Date();
      break;
    case "REMOVE":
      return undefined;
    default:
      return fail(17276, `Use of undefined variable: ${name}`);
  }
  return resolveFieldPath(value, rest);
}

export function evaluateExpression(expression: unknown, root: Doc): unknown {
  if (typeof expression === "string" && expression.startsWith("$")) {
    if (expression.startsWith("$$")) return evaluateVariable(expression.slice(2), root);
    if (expression.length === 1) fail(16872, "'$' by itself is not a valid FieldPath");
    return resolveFieldPath(root, splitPath(expression.slice(1)));
  }
  if (Array.isArray(expression)) {
    return expression.map((element) => evaluateExpression(element, root) ?? null);
  }
  if (isDocument(expression)) {
    const keys = Object.keys(expression);
    const first = keys[0];
    if (first !== undefined && first.startsWith("$")) {
      if (keys.length !== 1) {
        fail(
          15983,
          `an expression specification must contain exactly one field, the name of the expression. Found ${keys.length} fields in ${JSON.stringify(expression)}`,
        );
      }
      return evaluateOperator(first, expression[first], root);
    }
    const result: Doc = {};
    for (const [key, value] of Object.entries(expression)) {
      if (key.startsWith("$"))
        fail(16410, `FieldPath field names may not start with '$'. Consider using $getField or $setField.`);
      const evaluated = evaluateExpression(value, root);
      if (evaluated !== undefined) result[key] = evaluated;
    }
    return result;
  }
  return expression;
}

const OPERATORS = new Set([
  "$literal",
  "$add",
  "$subtract",
  "$multiply",
  "$divide",
  "$concat",
  "$toLower",
  "$toUpper",
  "$size",
  "$ifNull",
  "$cond",
  "$eq",
  "$ne",
  "$gt",
  "$gte",
  "$lt",
  "$lte",
  "$cmp",
  "$and",
  "$or",
  "$not",
  "$in",
  "$arrayElemAt",
  "$first",
  "$last",
  "$min",
  "$max",
  "$type",
]);
const VARIABLES = new Set(["ROOT", "CURRENT", "NOW", "REMOVE"]);

/**
 * Checks an expression without evaluating it, so that an unknown operator or variable fails
 * the command even when there is no document to evaluate it on (as mongod's parser does).
 */
export function validateExpression(expression: unknown): void {
  if (typeof expression === "string" && expression.startsWith("$$")) {
    const name = splitPath(expression.slice(2))[0] ?? "";
    if (!VARIABLES.has(name)) fail(17276, `Use of undefined variable: ${name}`);
  } else if (Array.isArray(expression)) {
    expression.forEach(validateExpression);
  } else if (isDocument(expression)) {
    const keys = Object.keys(expression);
    const first = keys[0];
    if (first?.startsWith("$")) {
      if (keys.length !== 1) {
        fail(
          15983,
          `an expression specification must contain exactly one field, the name of the expression. Found ${keys.length} fields in ${JSON.stringify(expression)}`,
        );
      }
      if (!OPERATORS.has(first)) fail(ErrorCode.InvalidPipelineOperator, `Unrecognized expression '${first}'`);
      if (first === "$literal") return;
      const argument = expression[first];
      if (isDocument(argument) && first === "$cond") Object.values(argument).forEach(validateExpression);
      else validateExpression(argument);
    } else {
      Object.values(expression).forEach(validateExpression);
    }
  }
}

function argumentList(argument: unknown): unknown[] {
  return Array.isArray(argument) ? argument : [argument];
}

function isNullish(value: unknown): boolean {
  return value === undefined || value === null;
}

function evaluateOperator(operator: string, argument: unknown, root: Doc): unknown {
  if (operator === "$literal") return argument;
  const args = () => argumentList(argument).map((arg) => evaluateExpression(arg, root));
  switch (operator) {
    case "$add": {
      let sum: unknown = new BSON.Int32(0);
      let date: Date | undefined;
      for (const value of args()) {
        if (isNullish(value)) return null;
        if (value instanceof Date) {
          if (date) fail(16612, "only one date allowed in an $add expression");
          date = value;
        } else if (isNumeric(value)) {
          sum = addNumbers(sum, value);
        } else {
          fail(ErrorCode.TypeMismatch, `$add only supports numeric or date types, not ${bsonTypeName(value)}`);
        }
      }
      return date ? new Date(date.getTime() + toDouble(sum)) : sum;
    }
    case "$subtract": {
      const [a, b] = args();
      if (isNullish(a) || isNullish(b)) return null;
      if (a instanceof Date && b instanceof Date) return BSON.Long.fromNumber(a.getTime() - b.getTime());
      if (a instanceof Date && isNumeric(b)) return new Date(a.getTime() - toDouble(b));
      if (isNumeric(a) && isNumeric(b)) return addNumbers(a, multiplyNumbers(b, new BSON.Int32(-1)));
      return fail(ErrorCode.TypeMismatch, `can't $subtract ${bsonTypeName(b)} from ${bsonTypeName(a)}`);
    }
    case "$multiply": {
      let product: unknown = new BSON.Int32(1);
      for (const value of args()) {
        if (isNullish(value)) return null;
        if (!isNumeric(value))
          fail(ErrorCode.TypeMismatch, `$multiply only supports numeric types, not ${bsonTypeName(value)}`);
        product = multiplyNumbers(product, value);
      }
      return product;
    }
    case "$divide": {
      const [a, b] = args();
      if (isNullish(a) || isNullish(b)) return null;
      if (!isNumeric(a) || !isNumeric(b))
        fail(
          ErrorCode.TypeMismatch,
          `$divide only supports numeric types, not ${bsonTypeName(a)} and ${bsonTypeName(b)}`,
        );
      if (toDouble(b) === 0) fail(ErrorCode.BadValue, "can't $divide by zero");
      return new BSON.Double(toDouble(a) / toDouble(b));
    }
    case "$concat": {
      let out = "";
      for (const value of args()) {
        if (isNullish(value)) return null;
        if (typeof value !== "string") fail(16702, `$concat only supports strings, not ${bsonTypeName(value)}`);
        out += value;
      }
      return out;
    }
    case "$toLower":
    case "$toUpper": {
      const [value] = args();
      if (isNullish(value)) return "";
      const text = typeof value === "string" ? value : String(isNumeric(value) ? toDouble(value) : value);
      return operator === "$toLower" ? text.toLowerCase() : text.toUpperCase();
    }
    case "$size": {
      const [value] = args();
      if (!Array.isArray(value))
        fail(
          17124,
          `The argument to $size must be an array. Type of argument was: ${bsonTypeName(value) ?? "missing"}`,
        );
      return new BSON.Int32(value.length);
    }
    case "$ifNull": {
      const values = args();
      for (const value of values.slice(0, -1)) if (!isNullish(value)) return value;
      return values[values.length - 1];
    }
    case "$cond": {
      const [condition, whenTrue, whenFalse] = isDocument(argument)
        ? [argument.if, argument.then, argument.else]
        : argumentList(argument);
      return evaluateExpression(expressionIsTrue(evaluateExpression(condition, root)) ? whenTrue : whenFalse, root);
    }
    case "$eq":
    case "$ne":
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte":
    case "$cmp": {
      const [a, b] = args();
      const c = compareValues(a, b);
      if (operator === "$cmp") return new BSON.Int32(c);
      return { $eq: c === 0, $ne: c !== 0, $gt: c > 0, $gte: c >= 0, $lt: c < 0, $lte: c <= 0 }[operator];
    }
    case "$and":
      return argumentList(argument).every((arg) => expressionIsTrue(evaluateExpression(arg, root)));
    case "$or":
      return argumentList(argument).some((arg) => expressionIsTrue(evaluateExpression(arg, root)));
    case "$not":
      return !expressionIsTrue(args()[0]);
    case "$in": {
      const [value, list] = args();
      if (!Array.isArray(list))
        fail(40081, `$in requires an array as a second argument, found: ${bsonTypeName(list) ?? "missing"}`);
      return list.some((element) => compareValues(element, value) === 0);
    }
    case "$arrayElemAt": {
      const [array, index] = args();
      if (isNullish(array) || isNullish(index)) return null;
      if (!Array.isArray(array))
        fail(28689, `$arrayElemAt's first argument must be an array, but is ${bsonTypeName(array)}`);
      const i = Math.trunc(toDouble(index));
      return i < 0 ? array[array.length + i] : array[i];
    }
    case "$first":
    case "$last": {
      const [array] = args();
      if (isNullish(array)) return null;
      if (!Array.isArray(array)) fail(28689, `${operator}'s argument must be an array, but is ${bsonTypeName(array)}`);
      return operator === "$first" ? array[0] : array[array.length - 1];
    }
    case "$min":
    case "$max": {
      const values = args().flatMap((value) =>
        Array.isArray(value) && argumentList(argument).length === 1 ? value : [value],
      );
      let best: unknown = null;
      for (const value of values) {
        if (isNullish(value)) continue;
        if (best === null || (operator === "$min" ? compareValues(value, best) < 0 : compareValues(value, best) > 0))
          best = value;
      }
      return best;
    }
    case "$type":
      return bsonTypeName(args()[0]) ?? "missing";
    default:
      return fail(ErrorCode.InvalidPipelineOperator, `Unrecognized expression '${operator}'`);
  }
}
