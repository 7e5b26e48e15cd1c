import type { Message } from "../domain/a2a-types.js";
import type { RunEvent } from "../domain/task-record.js";

/**
 * The history messages at indexes >= fromIndex that these log events carry, in order. The events must be in
 * log order and committed (the store filters out events above the head's version before calling this).
 */
export function historyMessagesOf(
  events: Iterable<Pick<RunEvent, "history" | "historyEnd">>,
  fromIndex: number,
): Message[] {
  const messages: Message[] = [];
  for (const event of events) {
    const { history, historyEnd } = event;
    if (!history || historyEnd === undefined) continue;
    const first = historyEnd - history.length;
    for (let i = Math.max(0, fromIndex - first); i < history.length; i++) messages.push(history[i]!);
  }
  return messages;
}
