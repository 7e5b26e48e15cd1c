import { describe, expect, it } from "vitest";
import type { Message } from "../../src/domain/a2a-types.js";
import { historyMessagesOf } from "../../src/store/history-events.js";
import { committedUpTo, redoKey, type EventDocument } from "../../src/store/mongo-task-documents.js";

const message = (text: string): Message => ({ messageId: text, role: "user", parts: [{ kind: "text", text }] });

function event(sequence: number, writer: string, history?: Message[], historyEnd?: number): EventDocument {
  return {
    taskId: "t",
    writer,
    eventId: `e${sequence}-${writer}`,
    runId: "t",
    type: "x",
    payload: {},
    timestamp: "2026-11-22T00:00:00.000Z",
    sequence,
    ...(history ? { history, historyEnd } : {}),
  };
}

describe("committedUpTo: history read from the log while a conflicted commit's redo is still in the head", () => {
  const log = [
    event(0, "a", [message("m0")], 1),
    event(1, "a"),
    event(2, "orphan", [message("lost")], 2),
    event(3, "orphan"),
  ];

  it("reads the head's redo in place of the orphan's documents of committed sequences", () => {
    const head = { version: 3, redo: { [redoKey(2)]: event(2, "b", [message("m1")], 2), [redoKey(3)]: event(3, "b") } };
    expect(historyMessagesOf(committedUpTo(head, log, 3), 0).map((m) => m.messageId)).toEqual(["m0", "m1"]);
  });

  it("never returns events above the version the reader asked for, nor above the head", () => {
    expect(committedUpTo({ version: 1 }, log, 3).map((e) => e.sequence)).toEqual([0, 1]);
    expect(committedUpTo({ version: 3 }, log, 1).map((e) => e.sequence)).toEqual([0, 1]);
  });
});
