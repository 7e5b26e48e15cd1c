// Projections for find / findAndModify (`mode: "find"`) and the $project stage
// (`mode: "aggregate"`): inclusion, exclusion, `_id` handling, dotted paths, computed fields,
// and in find mode the `$slice` and `$elemMatch` projection operators.
//
// As in MongoDB 4.4+, `{arr: {$slice: n}}` on its own neither includes nor excludes other
// fields (the document comes back whole with `arr` sliced); combined with an inclusion it is
// included; `$elemMatch` counts as an inclusion.

import { integerValue, isDocument, isNumeric, isTruthy, toDouble, type Doc } from "./bson-values.js";
import { splitPath } from "./document-paths.js";
import { ErrorCode, fail } from "./errors.js";
import { evaluateExpression, validateExpression } from "./expressions.js";
import { compileValueCondition } from "./query-matcher.js";

export type ProjectionMode = "find" | "aggregate";
export type DocProjector = (doc: Doc) => Doc;

type Leaf =
  | { kind: "include" }
  | { kind: "exclude" }
  | { kind: "slice"; skip: number | undefined; limit: number }
  | { kind: "elemMatch"; test: (value: unknown) => boolean }
  | { kind: "expression"; expression: unknown };

/** A level of the projection; children keep the order they were written in. */
interface Tree {
  children: Map<string, Tree | Leaf>;
}

function isTree(node: Tree | Leaf): node is Tree {
  return "children" in node;
}

export function compileProjection(spec: unknown, mode: ProjectionMode): DocProjector | undefined {
  if (spec === undefined || spec === null) return undefined;
  if (!isDocument(spec)) fail(ErrorCode.TypeMismatch, "projection must be an object");
  if (Object.keys(spec).length === 0) {
    if (mode === "aggregate")
      fail(51272, "Invalid $project :: caused by :: projection specification must have at least one field");
    return undefined;
  }
  const root: Tree = { children: new Map() };
  const state = { inclusion: false, exclusion: false };
  addFields(root, spec, [], mode, state);

  if (state.inclusion) {
    if (!root.children.has("_id")) root.children = new Map([["_id", { kind: "include" }], ...root.children]);
    return (doc) => applyInclusion(root, doc, doc);
  }
  return (doc) => applyExclusion(root, doc);
}

function addFields(
  tree: Tree,
  spec: Doc,
  prefix: string[],
  mode: ProjectionMode,
  state: { inclusion: boolean; exclusion: boolean },
): void {
  for (const [key, value] of Object.entries(spec)) {
    if (key.startsWith("$"))
      fail(16410, `FieldPath field names may not start with '$'. Consider using $getField or $setField.`);
    if (key.endsWith(".$") || key.includes(".$.")) {
      fail(ErrorCode.BadValue, "positional projection ('a.$') is not supported by the wire-protocol test server");
    }
    const path = [...prefix, ...splitPath(key)];
    const fullPath = path.join(".");
    const isId = fullPath === "_id";

    if (isDocument(value) && !Object.keys(value)[0]?.startsWith("$")) {
      if (Object.keys(value).length === 0)
        fail(51270, `An empty sub-projection is not a valid value. Found empty object at path ${fullPath}`);
      addFields(tree, value, path, mode, state);
      continue;
    }
    const leaf = parseLeaf(value, fullPath, mode);
    if (!isId) {
      if (leaf.kind === "exclude") {
        if (state.inclusion) fail(31254, `Cannot do exclusion on field ${fullPath} in inclusion projection`);
        state.exclusion = true;
      } else if (leaf.kind !== "slice") {
        if (state.exclusion) fail(31253, `Cannot do inclusion on field ${fullPath} in exclusion projection`);
        state.inclusion = true;
      }
    } else if (leaf.kind === "expression") {
      state.inclusion = true;
    }
    insertLeaf(tree, path, leaf, fullPath);
  }
  // `{_id: 0}` alone is an exclusion projection; `{_id: 1}` alone an inclusion projection.
  if (prefix.length === 0 && !state.inclusion && !state.exclusion) {
    const id = tree.children.get("_id");
    if (
      id &&
      !isTree(id) &&
      id.kind === "include" &&
      [...tree.children.values()].every((node) => isTree(node) || node.kind !== "slice")
    ) {
      state.inclusion = true;
    }
  }
}

function parseLeaf(value: unknown, path: string, mode: ProjectionMode): Leaf {
  if (typeof value === "boolean" || isNumeric(value))
    return isTruthy(value) ? { kind: "include" } : { kind: "exclude" };
  if (isDocument(value) && mode === "find") {
    const operator = Object.keys(value)[0];
    if (operator === "$slice") return parseSlice(value.$slice);
    if (operator === "$elemMatch") {
      if (path.includes(".")) fail(ErrorCode.BadValue, "Cannot use $elemMatch projection on a nested field.");
      if (!isDocument(value.$elemMatch)) fail(ErrorCode.BadValue, "elemMatch: Invalid argument, object required.");
      return { kind: "elemMatch", test: compileValueCondition(value.$elemMatch, true) };
    }
    if (operator === "$meta")
      fail(ErrorCode.BadValue, "$meta projections are not supported by the wire-protocol test server");
  }
  validateExpression(value);
  return { kind: "expression", expression: value };
}

function parseSlice(argument: unknown): Leaf {
  if (isNumeric(argument)) return { kind: "slice", skip: undefined, limit: Math.trunc(toDouble(argument)) };
  if (Array.isArray(argument) && argument.length === 2) {
    const skip = integerValue(argument[0]);
    const limit = integerValue(argument[1]);
    if (skip === undefined || limit === undefined)
      fail(ErrorCode.BadValue, "$slice only supports numbers and [skip, limit] arrays");
    if (limit <= 0) fail(ErrorCode.BadValue, `$slice limit must be positive`);
    return { kind: "slice", skip, limit };
  }
  return fail(ErrorCode.BadValue, "$slice only supports numbers and [skip, limit] arrays");
}

function insertLeaf(tree: Tree, path: string[], leaf: Leaf, fullPath: string): void {
  let level = tree;
  for (let i = 0; i < path.length - 1; i++) {
    const part = path[i] as string;
    const existing = level.children.get(part);
    if (existing && !isTree(existing))
      fail(31250, `Path collision at ${fullPath} remaining portion ${path.slice(i + 1).join(".")}`);
    if (existing) {
      level = existing;
    } else {
      const next: Tree = { children: new Map() };
      level.children.set(part, next);
      level = next;
    }
  }
  const last = path[path.length - 1] as string;
  if (level.children.has(last)) fail(31250, `Path collision at ${fullPath}`);
  level.children.set(last, leaf);
}

function applySlice(value: unknown, leaf: Extract<Leaf, { kind: "slice" }>): unknown {
  if (!Array.isArray(value)) return value;
  if (leaf.skip === undefined)
    return leaf.limit >= 0 ? value.slice(0, leaf.limit) : value.slice(Math.max(0, value.length + leaf.limit));
  const start = leaf.skip < 0 ? Math.max(0, value.length + leaf.skip) : Math.min(leaf.skip, value.length);
  return value.slice(start, start + leaf.limit);
}

function applyInclusion(tree: Tree, doc: Doc, root: Doc): Doc {
  const out: Doc = {};
  // Included fields come out in the document's own order...
  for (const [key, value] of Object.entries(doc)) {
    const node = tree.children.get(key);
    if (!node) continue;
    if (isTree(node)) {
      const projected = includeWithin(node, value, root);
      if (projected !== undefined) out[key] = projected;
    } else if (node.kind === "include") {
      out[key] = value;
    } else if (node.kind === "slice") {
      out[key] = applySlice(value, node);
    } else if (node.kind === "elemMatch") {
      const match = Array.isArray(value) ? value.find(node.test) : undefined;
      if (match !== undefined) out[key] = [match];
    }
  }
  // ...then computed fields, in the projection's order.
  for (const [key, node] of tree.children) {
    if (isTree(node)) {
      if (!hasExpressions(node)) continue;
      const target = isDocument(out[key]) ? (out[key] as Doc) : {};
      out[key] = applyInclusionExpressions(node, target, root);
    } else if (node.kind === "expression") {
      const value = evaluateExpression(node.expression, root);
      if (value !== undefined) out[key] = value;
      else delete out[key];
    }
  }
  return out;
}

function includeWithin(tree: Tree, value: unknown, root: Doc): unknown {
  if (isDocument(value)) return applyInclusion(tree, value, root);
  if (Array.isArray(value)) {
    // Inside arrays only embedded documents (and nested arrays) survive an inclusion.
    return value
      .filter((element) => isDocument(element) || Array.isArray(element))
      .map((element) => includeWithin(tree, element, root));
  }
  return undefined;
}

function hasExpressions(tree: Tree): boolean {
  return [...tree.children.values()].some((node) => (isTree(node) ? hasExpressions(node) : node.kind === "expression"));
}

function applyInclusionExpressions(tree: Tree, target: Doc, root: Doc): Doc {
  for (const [key, node] of tree.children) {
    if (isTree(node)) {
      if (hasExpressions(node))
        target[key] = applyInclusionExpressions(node, isDocument(target[key]) ? (target[key] as Doc) : {}, root);
    } else if (node.kind === "expression") {
      const value = evaluateExpression(node.expression, root);
      if (value !== undefined) target[key] = value;
    }
  }
  return target;
}

function applyExclusion(tree: Tree, doc: Doc): Doc {
  const out: Doc = {};
  for (const [key, value] of Object.entries(doc)) {
    const node = tree.children.get(key);
    if (!node) {
      out[key] = value;
    } else if (isTree(node)) {
      out[key] = excludeWithin(node, value);
    } else if (node.kind === "include") {
      out[key] = value;
    } else if (node.kind === "slice") {
      out[key] = applySlice(value, node);
    }
    // "exclude": dropped.
  }
  return out;
}

function excludeWithin(tree: Tree, value: unknown): unknown {
  if (isDocument(value)) return applyExclusion(tree, value);
  if (Array.isArray(value)) return value.map((element) => excludeWithin(tree, element));
  return value;
}
