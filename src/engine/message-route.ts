import type { Message } from "../domain/a2a-types.js";
import { canonicalJson } from "../domain/canonical-json.js";
import { END_TARGET, type SwitchCondition, type SwitchNode } from "../workflows/workflow-types.js";

/** Where a `switch` sends the run for this message: the first matching case, else its default; `undefined` = the next node. */
export function switchTarget(
  node: SwitchNode,
  message: Message | undefined,
): { target: string | undefined; matched: number | "default" } {
  const index = message ? node.cases.findIndex((c) => conditionHolds(c.when, message)) : -1;
  if (index >= 0) return { target: node.cases[index]!.goto, matched: index };
  return { target: node.default, matched: "default" };
}

/** A `goto`/`next` target as a cursor: `$end` ends the run. */
export function cursorOf(target: string): string | null {
  return target === END_TARGET ? null : target;
}

export function conditionHolds(when: SwitchCondition, message: Message): boolean {
  const { text, data } = inputOfMessage(message);
  if (when.messageIdPrefix !== undefined && !message.messageId.startsWith(when.messageIdPrefix)) return false;
  if (when.textContains !== undefined && !text.toLowerCase().includes(when.textContains.toLowerCase())) return false;
  if (when.textMatches !== undefined && !new RegExp(when.textMatches, "i").test(text)) return false;
  if (when.metadata && !valuesMatch(when.metadata, message.metadata ?? {})) return false;
  if (when.data && !valuesMatch(when.data, data)) return false;
  return true;
}

function valuesMatch(expected: Record<string, unknown>, source: Record<string, unknown>): boolean {
  return Object.entries(expected).every(([path, value]) => {
    const actual = valueAt(source, path);
    return actual !== undefined && canonicalJson(actual) === canonicalJson(value);
  });
}

function valueAt(source: Record<string, unknown>, path: string): unknown {
  let current: unknown = source;
  for (const key of path.split(".")) {
    if (typeof current !== "object" || current === null || Array.isArray(current) || !Object.hasOwn(current, key))
      return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}
/** A message's text parts (joined) and data parts (merged), as handlers see their input. */
export function inputOfMessage(message: Message | undefined): { text: string; data: Record<string, unknown> } {
  const parts = message?.parts ?? [];
  const text = parts.flatMap((p) => (p.kind === "text" ? [p.text] : [])).join("\n");
  const data = Object.assign({}, ...parts.flatMap((p) => (p.kind === "data" ? [p.data] : []))) as Record<
    string,
    unknown
  >;
  return { text, data };
}
