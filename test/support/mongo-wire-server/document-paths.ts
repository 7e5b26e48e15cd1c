// Dotted field paths ("a.b.0.c") with MongoDB's rules for arrays met along the way: reading, and writing into
// a document (the update operators, upserts and $project/$unwind outputs).

import { formatValue, isDocument, type Doc } from "./bson-values.js";
import { ErrorCode, fail } from "./errors.js";

export function splitPath(path: string): string[] {
  return path.split(".");
}

export function isArrayIndex(part: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(part);
}

/**
 * Query-path traversal: calls `visit` for every value `parts` can reach in `value`, stopping as
 * soon as a call returns true. Like mongod, an array met before the end of the path is searched
 * element by element (only its embedded documents are descended into; nested arrays are not),
 * and a numeric component also indexes into it. `visit(undefined)` means the path is missing.
 * The leaf value itself is passed as is, even when it is an array: whether the predicate also
 * looks at the array's elements is the caller's choice (it differs between operators).
 */
export function someValueAtPath(
  value: unknown,
  parts: readonly string[],
  visit: (leaf: unknown) => boolean,
  depth = 0,
): boolean {
  if (depth === parts.length) return visit(value);
  const part = parts[depth] as string;
  if (isDocument(value)) {
    return someValueAtPath(Object.hasOwn(value, part) ? value[part] : undefined, parts, visit, depth + 1);
  }
  if (Array.isArray(value)) {
    let visited = false;
    if (isArrayIndex(part) && Number(part) < value.length) {
      visited = true;
      if (someValueAtPath(value[Number(part)], parts, visit, depth + 1)) return true;
    }
    for (const element of value) {
      if (!isDocument(element)) continue;
      visited = true;
      if (someValueAtPath(element, parts, visit, depth)) return true;
    }
    return visited ? false : visit(undefined);
  }
  return visit(undefined);
}

/**
 * All leaf values the path reaches, with leaf arrays expanded into their elements: the values
 * used for sort keys, index keys and `distinct`. Missing leaves appear as `undefined`.
 */
export function valuesAtPath(doc: Doc, parts: readonly string[]): unknown[] {
  const values: unknown[] = [];
  someValueAtPath(doc, parts, (leaf) => {
    if (Array.isArray(leaf)) values.push(...leaf);
    else values.push(leaf);
    return false;
  });
  return values;
}

/**
 * Plain lookup used by update operators: descends documents, and arrays only by numeric index.
 * Returns undefined when the path does not exist.
 */
export function getAtPath(doc: Doc, parts: readonly string[]): unknown {
  let current: unknown = doc;
  for (const part of parts) {
    if (isDocument(current)) {
      if (!Object.hasOwn(current, part)) return undefined;
      current = current[part];
    } else if (Array.isArray(current) && isArrayIndex(part)) {
      current = current[Number(part)];
    } else {
      return undefined;
    }
  }
  return current;
}

/** A path of field names, compared component-wise (how mongod orders update paths). */
export function comparePaths(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] as string;
    const y = b[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** True when `prefix` equals `path` or is one of its ancestors. */
export function isPathPrefix(prefix: readonly string[], path: readonly string[]): boolean {
  return prefix.length <= path.length && prefix.every((part, i) => path[i] === part);
}

// ---------------------------------------------------------------------------------------
// Writing into a document along a dotted path

function readChild(container: Doc | unknown[], part: string): unknown {
  if (Array.isArray(container)) return container[Number(part)];
  return Object.hasOwn(container, part) ? container[part] : undefined;
}

function writeChild(container: Doc | unknown[], part: string, value: unknown): void {
  if (Array.isArray(container)) {
    const index = Number(part);
    // Writing past the end of an array pads it with nulls, as mongod does.
    while (container.length < index) container.push(null);
    container[index] = value;
  } else {
    container[part] = value;
  }
}

function cannotCreate(part: string, parentName: string, parent: unknown): never {
  return fail(
    ErrorCode.PathNotViable,
    `Cannot create field '${part}' in element {${parentName}: ${formatValue(parent)}}`,
  );
}

/** Sets the value at `path`, creating missing embedded documents on the way. */
export function writeAtPath(doc: Doc, path: readonly string[], value: unknown): void {
  let container: Doc | unknown[] = doc;
  for (let i = 0; i < path.length; i++) {
    const part = path[i] as string;
    if (Array.isArray(container) && !isArrayIndex(part)) cannotCreate(part, path[i - 1] ?? "", container);
    if (i === path.length - 1) {
      writeChild(container, part, value);
      return;
    }
    let next = readChild(container, part);
    if (next === undefined) {
      next = {};
      writeChild(container, part, next);
    } else if (!isDocument(next) && !Array.isArray(next)) {
      cannotCreate(path[i + 1] as string, part, next);
    }
    container = next as Doc | unknown[];
  }
}

/** Removes the field at `path` (an array element becomes null); a missing path is a no-op. */
export function unsetAtPath(doc: Doc, path: readonly string[]): void {
  let container: unknown = doc;
  for (let i = 0; i < path.length - 1; i++) {
    const part = path[i] as string;
    if (isDocument(container)) container = Object.hasOwn(container, part) ? container[part] : undefined;
    else if (Array.isArray(container) && isArrayIndex(part)) container = container[Number(part)];
    else return;
  }
  const last = path[path.length - 1] as string;
  if (isDocument(container)) delete container[last];
  else if (Array.isArray(container) && isArrayIndex(last) && Number(last) < container.length)
    container[Number(last)] = null;
}
