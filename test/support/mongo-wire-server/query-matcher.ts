// Query filters (find, update, delete, $match, partialFilterExpression...) compiled into
// predicates with MongoDB's matching semantics. Compiling first means an invalid filter is
// rejected before any document is touched, with mongod's error code.

import { BSON } from "mongodb";
import {
  bsonTypeName,
  canonicalTypeOrder,
  integerValue,
  isDocument,
  isNumeric,
  isRegex,
  isTruthy,
  toDouble,
  type Doc,
} from "./bson-values.js";
import { compareValues, valuesEqual } from "./bson-compare.js";
import { someValueAtPath, splitPath } from "./document-paths.js";
import { ErrorCode, fail } from "./errors.js";
import { evaluateExpression, expressionIsTrue, validateExpression } from "./expressions.js";

export type DocPredicate = (doc: Doc) => boolean;
type ValueTest = (value: unknown) => boolean;

/**
 * One compiled operator of a field condition. `test` sees a single value (undefined = missing).
 * `expand`: also try the elements when the value is an array ({a: 5} matches {a: [5, 6]}).
 * `negate`: the operator is the negation of a positive one over the whole path ($ne, $nin,
 * $exists: false), which is how mongod defines them.
 */
type OperatorNode =
  | { kind: "test"; test: ValueTest; expand: boolean; negate: boolean }
  | { kind: "not"; inner: OperatorNode[] }
  | { kind: "and"; inner: OperatorNode[] };

const LOGICAL_OPERATORS = new Set(["$and", "$or", "$nor"]);

export function compileFilter(filter: unknown): DocPredicate {
  if (filter === undefined || filter === null) return () => true;
  if (!isDocument(filter)) fail(ErrorCode.TypeMismatch, "filter must be an object");
  const predicates: DocPredicate[] = [];
  for (const [key, condition] of Object.entries(filter)) {
    if (key.startsWith("$")) predicates.push(compileTopLevelOperator(key, condition));
    else predicates.push(compileFieldCondition(key, condition));
  }
  return (doc) => predicates.every((predicate) => predicate(doc));
}

function compileTopLevelOperator(operator: string, argument: unknown): DocPredicate {
  if (LOGICAL_OPERATORS.has(operator)) {
    if (!Array.isArray(argument)) fail(ErrorCode.BadValue, `${operator} must be an array`);
    if (argument.length === 0) fail(ErrorCode.BadValue, "$and/$or/$nor must be a nonempty array");
    const clauses = argument.map((clause) => {
      if (!isDocument(clause)) fail(ErrorCode.BadValue, "$or/$and/$nor entries need to be full objects");
      return compileFilter(clause);
    });
    if (operator === "$and") return (doc) => clauses.every((clause) => clause(doc));
    if (operator === "$or") return (doc) => clauses.some((clause) => clause(doc));
    return (doc) => !clauses.some((clause) => clause(doc));
  }
  switch (operator) {
    case "$comment":
      return () => true;
    case "$expr":
      validateExpression(argument);
      return (doc) => expressionIsTrue(evaluateExpression(argument, doc));
    case "$where":
    case "$text":
    case "$jsonSchema":
    case "$sampleRate":
      return fail(ErrorCode.BadValue, `${operator} is not supported by the wire-protocol test server`);
    default:
      return fail(
        ErrorCode.BadValue,
        `unknown top level operator: ${operator}. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.`,
      );
  }
}

/** A condition written as an operator document: {$gt: 1, $lt: 5}. */
function isOperatorDocument(condition: unknown): condition is Doc {
  if (!isDocument(condition)) return false;
  const first = Object.keys(condition)[0];
  return first !== undefined && first.startsWith("$");
}

function compileFieldCondition(path: string, condition: unknown): DocPredicate {
  const parts = splitPath(path);
  const nodes = compileCondition(condition);
  return (doc) => nodes.every((node) => nodeMatchesPath(node, doc, parts));
}

function compileCondition(condition: unknown): OperatorNode[] {
  if (isOperatorDocument(condition)) return compileOperators(condition);
  if (isRegex(condition)) return [{ kind: "test", test: regexTest(condition), expand: true, negate: false }];
  return [{ kind: "test", test: equalityTest(condition), expand: true, negate: false }];
}

function nodeMatchesPath(node: OperatorNode, doc: Doc, parts: readonly string[]): boolean {
  if (node.kind === "not") return !node.inner.every((inner) => nodeMatchesPath(inner, doc, parts));
  if (node.kind === "and") return node.inner.every((inner) => nodeMatchesPath(inner, doc, parts));
  const hit = someValueAtPath(
    doc,
    parts,
    (leaf) => node.test(leaf) || (node.expand && Array.isArray(leaf) && leaf.some(node.test)),
  );
  return node.negate ? !hit : hit;
}

function nodeMatchesValue(node: OperatorNode, value: unknown): boolean {
  if (node.kind === "not") return !node.inner.every((inner) => nodeMatchesValue(inner, value));
  if (node.kind === "and") return node.inner.every((inner) => nodeMatchesValue(inner, value));
  const hit = node.test(value) || (node.expand && Array.isArray(value) && value.some(node.test));
  return node.negate ? !hit : hit;
}

/**
 * A condition on a single value, as `$pull` and value-style `$elemMatch` use it: an operator
 * document, a regex, an embedded query on document elements, or plain equality.
 */
export function compileValueCondition(condition: unknown, documentQueries: boolean): ValueTest {
  if (isOperatorDocument(condition) && !LOGICAL_OPERATORS.has(Object.keys(condition)[0] as string)) {
    const nodes = compileOperators(condition);
    return (value) => nodes.every((node) => nodeMatchesValue(node, value));
  }
  if (documentQueries && isDocument(condition)) {
    const predicate = compileFilter(condition);
    return (value) => isDocument(value) && predicate(value);
  }
  if (isRegex(condition)) return regexTest(condition);
  return (value) => valuesEqual(value, condition);
}

function compileOperators(operators: Doc): OperatorNode[] {
  const nodes: OperatorNode[] = [];
  for (const [operator, argument] of Object.entries(operators)) {
    if (operator === "$options") {
      if (!Object.hasOwn(operators, "$regex")) fail(ErrorCode.BadValue, "$options needs a $regex");
      continue;
    }
    nodes.push(compileOperator(operator, argument, operators));
  }
  return nodes;
}

function test(testFn: ValueTest, expand = true, negate = false): OperatorNode {
  return { kind: "test", test: testFn, expand, negate };
}

function compileOperator(operator: string, argument: unknown, siblings: Doc): OperatorNode {
  switch (operator) {
    case "$eq":
      return test(equalityTest(argument));
    case "$ne":
      if (isRegex(argument)) fail(ErrorCode.BadValue, "Can't have regex as arg to $ne.");
      return test(equalityTest(argument), true, true);
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte":
      return test(comparisonTest(operator, argument));
    case "$in":
      return test(inTest(argument, "$in"));
    case "$nin":
      return test(inTest(argument, "$nin"), true, true);
    case "$exists":
      return test((value) => value !== undefined, false, !isTruthy(argument));
    case "$type":
      return test(typeTest(argument));
    case "$size": {
      const size = integerValue(argument);
      if (size === undefined) fail(ErrorCode.BadValue, "$size needs a number");
      if (size < 0) fail(ErrorCode.BadValue, "$size may not be negative");
      return test((value) => Array.isArray(value) && value.length === size, false);
    }
    case "$all":
      return allNode(argument);
    case "$elemMatch": {
      if (!isDocument(argument)) fail(ErrorCode.BadValue, "$elemMatch needs an Object");
      // {$elemMatch: {$gt: 1}} tests elements as values, {$elemMatch: {a: 1}} as documents.
      const matchesElement = compileValueCondition(argument, true);
      return test((value) => Array.isArray(value) && value.some(matchesElement), false);
    }
    case "$regex":
      return test(regexTest(regexFromOperator(argument, siblings.$options)));
    case "$mod": {
      if (!Array.isArray(argument) || argument.length !== 2)
        fail(ErrorCode.BadValue, "malformed mod, needs to be an array");
      const [divisor, remainder] = argument.map((v) => (isNumeric(v) ? Math.trunc(toDouble(v)) : Number.NaN));
      if (divisor === undefined || remainder === undefined || Number.isNaN(divisor) || Number.isNaN(remainder)) {
        fail(ErrorCode.BadValue, "malformed mod, divisor and remainder must be numbers");
      }
      if (divisor === 0) fail(ErrorCode.BadValue, "divisor cannot be 0");
      return test((value) => isNumeric(value) && Math.trunc(toDouble(value)) % divisor === remainder);
    }
    case "$not": {
      if (isRegex(argument)) return { kind: "not", inner: [test(regexTest(argument))] };
      if (!isDocument(argument)) fail(ErrorCode.BadValue, "$not needs a regex or a document");
      if (Object.keys(argument).length === 0) fail(ErrorCode.BadValue, "$not cannot be empty");
      if (!isOperatorDocument(argument)) fail(ErrorCode.BadValue, "$not needs a regex or a document");
      return { kind: "not", inner: compileOperators(argument) };
    }
    case "$comment":
      return test(() => true, false);
    default:
      return fail(ErrorCode.BadValue, `unknown operator: ${operator}`);
  }
}

function equalityTest(target: unknown): ValueTest {
  // A missing field equals null (`{a: null}` matches documents without `a`).
  return (value) => valuesEqual(value === undefined ? null : value, target);
}

function comparisonTest(operator: string, target: unknown): ValueTest {
  if (isRegex(target)) fail(ErrorCode.BadValue, `Can't have RegEx as arg to predicate over field.`);
  const targetType = bsonTypeName(target);
  const crossType = targetType === "minKey" || targetType === "maxKey";
  return (raw) => {
    const value = raw === undefined ? null : raw;
    // Type bracketing: $gt/$lt only compare values of the same canonical type.
    if (!crossType && canonicalTypeOrder(value) !== canonicalTypeOrder(target)) return false;
    const c = compareValues(value, target);
    switch (operator) {
      case "$gt":
        return c > 0;
      case "$gte":
        return c >= 0;
      case "$lt":
        return c < 0;
      default:
        return c <= 0;
    }
  };
}

function inTest(argument: unknown, operator: string): ValueTest {
  if (!Array.isArray(argument)) fail(ErrorCode.BadValue, `${operator} needs an array`);
  const tests = argument.map((candidate) => {
    if (isOperatorDocument(candidate)) fail(ErrorCode.BadValue, `cannot nest $ under ${operator}`);
    return isRegex(candidate) ? regexTest(candidate) : equalityTest(candidate);
  });
  return (value) => tests.some((t) => t(value));
}

function allNode(argument: unknown): OperatorNode {
  if (!Array.isArray(argument)) fail(ErrorCode.BadValue, "$all needs an array");
  if (argument.length === 0) return test(() => false, false);
  const nodes = argument.map((element) => {
    if (isDocument(element) && Object.keys(element)[0] === "$elemMatch")
      return compileOperator("$elemMatch", element.$elemMatch, element);
    if (isOperatorDocument(element)) fail(ErrorCode.BadValue, "no $ expressions in $all");
    return test(isRegex(element) ? regexTest(element) : equalityTest(element));
  });
  // Each element may be matched by a different array element, so this is a plain conjunction.
  return { kind: "and", inner: nodes };
}

const TYPE_ALIASES: Record<number, string> = {
  1: "double",
  2: "string",
  3: "object",
  4: "array",
  5: "binData",
  6: "undefined",
  7: "objectId",
  8: "bool",
  9: "date",
  10: "null",
  11: "regex",
  12: "dbPointer",
  13: "javascript",
  14: "symbol",
  15: "javascriptWithScope",
  16: "int",
  17: "timestamp",
  18: "long",
  19: "decimal",
  [-1]: "minKey",
  127: "maxKey",
};
const TYPE_NAMES = new Set([...Object.values(TYPE_ALIASES), "number"]);

function typeTest(argument: unknown): ValueTest {
  const wanted = (Array.isArray(argument) ? argument : [argument]).map((entry) => {
    if (typeof entry === "string") {
      if (!TYPE_NAMES.has(entry)) fail(ErrorCode.BadValue, `Unknown type name alias: ${entry}`);
      return entry;
    }
    const code = integerValue(entry);
    const name = code === undefined ? undefined : TYPE_ALIASES[code];
    if (name === undefined) fail(ErrorCode.BadValue, `Invalid numerical type code: ${String(entry)}`);
    return name;
  });
  if (wanted.length === 0) fail(ErrorCode.FailedToParse, "$type must match at least one type");
  return (value) => {
    const name = bsonTypeName(value);
    if (name === undefined) return false;
    return wanted.some((w) => w === name || (w === "number" && isNumeric(value)));
  };
}

function regexFromOperator(pattern: unknown, options: unknown): BSON.BSONRegExp {
  if (options !== undefined && typeof options !== "string") fail(ErrorCode.BadValue, "$options has to be a string");
  if (isRegex(pattern)) {
    if (options !== undefined && pattern.options !== "") {
      fail(ErrorCode.BadValue, "options set in both $regex and $options");
    }
    return new BSON.BSONRegExp(pattern.pattern, options ?? pattern.options);
  }
  if (typeof pattern !== "string") fail(ErrorCode.BadValue, "$regex has to be a string");
  return new BSON.BSONRegExp(pattern, options ?? "");
}

function regexTest(regex: BSON.BSONRegExp): ValueTest {
  const compiled = toJsRegExp(regex.pattern, regex.options);
  return (value) => {
    if (typeof value === "string") return compiled.test(value);
    if (isRegex(value)) return value.pattern === regex.pattern && value.options === regex.options;
    return false;
  };
}

/** Translates a PCRE pattern with MongoDB options (i, m, s, x, u) into a JS RegExp. */
export function toJsRegExp(pattern: string, options: string): RegExp {
  let flags = "";
  let extended = false;
  for (const option of options) {
    if (option === "i" || option === "m" || option === "s") flags += flags.includes(option) ? "" : option;
    else if (option === "x") extended = true;
    else if (option === "u")
      continue; // PCRE's UTF mode: JS strings are already Unicode
    else fail(51108, `invalid flag in regex options: ${option}`);
  }
  let source = pattern;
  // PCRE inline flags at the start of the pattern, e.g. "(?i)abc".
  const inline = /^\(\?([imsx]+)\)/.exec(source);
  if (inline) {
    source = source.slice(inline[0].length);
    for (const option of inline[1] as string) {
      if (option === "x") extended = true;
      else if (!flags.includes(option)) flags += option;
    }
  }
  if (extended) source = stripExtendedWhitespace(source);
  source = source.replace(/\\A/g, "^").replace(/\\[zZ]/g, "$");
  try {
    return new RegExp(source, flags);
  } catch (error) {
    return fail(51091, `Regular expression is invalid: ${(error as Error).message}`);
  }
}

/** The `x` option: unescaped whitespace and #-comments outside character classes are ignored. */
function stripExtendedWhitespace(pattern: string): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    if (ch === "\\") {
      out += ch + (pattern[i + 1] ?? "");
      i++;
    } else if (inClass) {
      if (ch === "]") inClass = false;
      out += ch;
    } else if (ch === "[") {
      inClass = true;
      out += ch;
    } else if (ch === "#") {
      while (i < pattern.length && pattern[i] !== "\n") i++;
    } else if (!/\s/.test(ch)) {
      out += ch;
    }
  }
  return out;
}
