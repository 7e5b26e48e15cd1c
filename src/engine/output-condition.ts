import { canonicalJson } from "../domain/canonical-json.js";
import type { OutputExpectation, OutputTest } from "../workflows/workflow-types.js";

/**
 * A `switch` case's `output` condition: `"<nodeId>.<dotted.path>"` → the value the node's output must hold there
 * (a JSON value it must equal) or a test (`{ $gt: 1000 }`, `{ $exists: true }`, …). The same reading at load time
 * (workflow-output-checks.ts) and when the switch runs, so what `check` accepts is what runs.
 */

/** The operators an output test may use; an object whose keys all start with `$` is a test, any other a value. */
export const OUTPUT_TEST_OPERATORS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$exists"] as const;

/**
 * The node and the path inside its output that `key` names. Node ids may hold dots, so the longest node id that
 * is `key` or a prefix of it followed by `.` wins; undefined when no node id fits.
 */
export function outputKeyParts(key: string, nodeIds: Iterable<string>): { nodeId: string; path: string[] } | undefined {
  let best: string | undefined;
  for (const id of nodeIds)
    if ((key === id || key.startsWith(`${id}.`)) && (best === undefined || id.length > best.length)) best = id;
  if (best === undefined) return undefined;
  return { nodeId: best, path: key === best ? [] : key.slice(best.length + 1).split(".") };
}

/** Whether every entry of an `output` condition holds on the run's outputs so far. */
export function outputConditionHolds(
  condition: Readonly<Record<string, OutputExpectation>>,
  outputs: Readonly<Record<string, unknown>>,
  nodeIds: readonly string[],
): boolean {
  return Object.entries(condition).every(([key, expected]) => {
    const parts = outputKeyParts(key, nodeIds);
    const actual =
      parts && Object.hasOwn(outputs, parts.nodeId) ? valueAtPath(outputs[parts.nodeId], parts.path) : undefined;
    return expectationHolds(expected, actual);
  });
}

/** The value at `path` inside `source` (object keys only), or undefined when something on the way is missing. */
export function valueAtPath(source: unknown, path: readonly string[]): unknown {
  let current = source;
  for (const key of path) {
    if (typeof current !== "object" || current === null || Array.isArray(current) || !Object.hasOwn(current, key))
      return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

export function isOutputTest(expected: unknown): expected is OutputTest {
  if (typeof expected !== "object" || expected === null || Array.isArray(expected)) return false;
  const keys = Object.keys(expected);
  return keys.length > 0 && keys.every((k) => k.startsWith("$"));
}

/** `actual` undefined: the node has not run, or its output has nothing at that path. */
export function expectationHolds(expected: OutputExpectation, actual: unknown): boolean {
  if (!isOutputTest(expected)) return actual !== undefined && canonicalJson(actual) === canonicalJson(expected);
  const test = expected;
  if (test.$exists !== undefined && (actual !== undefined) !== test.$exists) return false;
  if (test.$eq !== undefined && (actual === undefined || canonicalJson(actual) !== canonicalJson(test.$eq)))
    return false;
  if (test.$ne !== undefined && actual !== undefined && canonicalJson(actual) === canonicalJson(test.$ne)) return false;
  const order: Array<[number | string | undefined, (c: number) => boolean]> = [
    [test.$gt, (c) => c > 0],
    [test.$gte, (c) => c >= 0],
    [test.$lt, (c) => c < 0],
    [test.$lte, (c) => c <= 0],
  ];
  for (const [bound, holds] of order) {
    if (bound === undefined) continue;
    const c = compare(actual, bound);
    if (c === undefined || !holds(c)) return false;
  }
  return true;
}

/** Numbers with numbers, strings with strings (ISO dates order as text); anything else does not compare. */
function compare(actual: unknown, bound: number | string): number | undefined {
  if (typeof bound === "number" && typeof actual === "number") return actual - bound;
  if (typeof bound === "string" && typeof actual === "string") return actual < bound ? -1 : actual > bound ? 1 : 0;
  return undefined;
}
