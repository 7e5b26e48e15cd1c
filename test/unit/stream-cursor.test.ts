import { describe, expect, it } from "vitest";
import { mapStream } from "../../src/domain/live-stream.js";
import {
  formatStreamCursor,
  parseStreamCursor,
  streamCursorOf,
  tagStreamCursor,
} from "../../src/domain/stream-cursor.js";
import { DomainError } from "../../src/domain/errors.js";

describe("stream cursors (SSE ids, Last-Event-ID)", () => {
  it("format and parse are inverse, with and without the part of a log event", () => {
    for (const cursor of [
      { taskId: "6f0c-1", sequence: 0 },
      { taskId: "t", sequence: 12 },
      { taskId: "a:b", sequence: 7, part: 0 },
    ]) {
      expect(parseStreamCursor(formatStreamCursor(cursor))).toEqual(cursor);
    }
    expect(formatStreamCursor({ taskId: "t", sequence: 3, part: 1 })).toBe("t:3.1");
    expect(parseStreamCursor(" t:3 ")).toEqual({ taskId: "t", sequence: 3 });
  });

  it.each([
    "",
    "abc",
    "-1",
    "12",
    "t:-1",
    "t:x",
    "t:1.2.3",
    "t:01",
    "t:1.",
    `t:${"9".repeat(16)}`,
    ":5",
    "a\nb:5",
    `${"x".repeat(300)}:1`,
  ])("%j is invalid params, and the message does not repeat it", (raw) => {
    let caught: unknown;
    try {
      parseStreamCursor(raw);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(DomainError);
    expect((caught as DomainError).code).toBe("invalid-params");
    if (raw.length > 3) expect((caught as DomainError).message).not.toContain(raw);
  });

  it("a cursor goes with its item through mapStream (every encoding keeps the SSE id)", async () => {
    async function* source() {
      yield tagStreamCursor({ n: 1 }, "t:1");
      yield { n: 2 };
    }
    const out: object[] = [];
    for await (const item of mapStream(source(), (v) => ({ encoded: v.n }))) out.push(item);
    expect(out.map(streamCursorOf)).toEqual(["t:1", undefined]);
  });
});
