import { DomainError, invalidParams } from "./errors.js";

/**
 * Reading untrusted JSON: strict UTF-8, then JSON, then a bound on nesting. Every walk here is iterative,
 * so no input can overflow the stack; the depth bound keeps deeper values out of the store, where protobuf
 * (`google.protobuf.Value`, 100 levels) or MongoDB could no longer read or write them.
 */

/** The default of `MAX_INPUT_DEPTH`: well below protobuf's recursion limit (100) and MongoDB's (100). */
export const DEFAULT_MAX_INPUT_DEPTH = 32;

/**
 * The deepest JSON a protobuf reader with the usual recursion limit of 100 can still decode in binary: each
 * JSON level is two messages there (Value, Struct), so 49 levels already fail (measured with protobuf-es).
 * MAX_INPUT_DEPTH may not exceed it, and values deeper than it (stored before the bound) are left out on the wire.
 */
export const WIRE_MAX_DEPTH = 48;

/** A JSON object for a protobuf Struct: the value itself, or a marker when it nests deeper than the wire carries. */
export function wireSafeObject(value: Record<string, unknown>): Record<string, unknown> {
  if (nestingDepth(value, WIRE_MAX_DEPTH) > WIRE_MAX_DEPTH) {
    return {
      unencodable: `this value nests deeper than ${WIRE_MAX_DEPTH} levels, more than the wire carries; it is left out`,
    };
  }
  // The round trip drops `undefined` members, which Struct cannot carry.
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** How many levels a body's envelope may add around the values MAX_INPUT_DEPTH bounds (JSON-RPC → params → message → parts → part). */
export const BODY_ENVELOPE_DEPTH = 8;

/**
 * A JSON request body: bytes that are not UTF-8, or not JSON, are a parse error; a body nested deeper than
 * `maxDepth` plus its envelope is invalid params (the values inside are bounded exactly where they are read).
 */
export function parseJsonBody(raw: Uint8Array, maxDepth: number): unknown {
  let text: string;
  try {
    text = strictUtf8.decode(raw);
  } catch {
    throw new DomainError("parse-error", "Invalid JSON payload: the body is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DomainError("parse-error", "Invalid JSON payload: the body is not valid JSON");
  }
  assertDepth(value, maxDepth + BODY_ENVELOPE_DEPTH, "the body");
  return value;
}

/** Refuses a value whose objects and arrays nest deeper than `maxDepth` (a scalar is depth 0, `{}` depth 1). */
export function assertDepth(value: unknown, maxDepth: number, what: string): void {
  if (nestingDepth(value, maxDepth) > maxDepth) {
    throw invalidParams(`${what} is nested too deeply: more than ${maxDepth} levels of objects and arrays`, {
      maxDepth,
    });
  }
}

/** How deep objects and arrays nest in `value`; stops counting once past `stopAbove`. */
export function nestingDepth(value: unknown, stopAbove = Number.POSITIVE_INFINITY): number {
  let deepest = 0;
  // Two parallel stacks, and only objects pushed: no allocation per value (this runs on every request body).
  const values: object[] = [];
  const depths: number[] = [];
  if (value !== null && typeof value === "object") {
    values.push(value);
    depths.push(1);
  }
  while (values.length > 0) {
    const item = values.pop()!;
    const depth = depths.pop()!;
    if (depth > deepest) deepest = depth;
    if (deepest > stopAbove) return deepest;
    const children: unknown[] = Array.isArray(item) ? item : Object.values(item);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (child !== null && typeof child === "object") {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return deepest;
}
