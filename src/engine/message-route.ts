import type { Message } from "../domain/a2a-types.js";
import { canonicalJson } from "../domain/canonical-json.js";
import { outputConditionHolds, valueAtPath } from "./output-condition.js";
import { END_TARGET, type SwitchCondition, type SwitchNode } from "../workflows/workflow-types.js";

/** What a switch reads: the incoming message, and the outputs of the nodes that ran (with every node id, to split keys). */
export interface SwitchInput {
  message: Message | undefined;
  outputs: Readonly<Record<string, unknown>>;
  nodeIds: readonly string[];
}

/** Where a `switch` sends the run: the first case whose condition holds, else its default; `undefined` = the next node. */
export function switchTarget(
  node: SwitchNode,
  input: SwitchInput,
): { target: string | undefined; matched: number | "default" } {
  const index = node.cases.findIndex((c) => conditionHolds(c.when, input));
  if (index >= 0) return { target: node.cases[index]!.goto, matched: index };
  return { target: node.default, matched: "default" };
}

/** A `goto`/`next` target as a cursor: `$end` ends the run. */
export function cursorOf(target: string): string | null {
  return target === END_TARGET ? null : target;
}

/** Every field given must hold; a message condition does not hold without a message. */
export function conditionHolds(when: SwitchCondition, { message, outputs, nodeIds }: SwitchInput): boolean {
  if (when.output && !outputConditionHolds(when.output, outputs, nodeIds)) return false;
  const onMessage = Object.keys(when).some((k) => k !== "output");
  if (!onMessage) return true;
  if (!message) return false;
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
    const actual = valueAtPath(source, path.split("."));
    return actual !== undefined && canonicalJson(actual) === canonicalJson(value);
  });
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
