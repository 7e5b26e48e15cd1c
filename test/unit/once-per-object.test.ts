// oncePerObject: an answer kept per object (the streams of a task share one encoding of each update).
import { describe, expect, it } from "vitest";
import { oncePerObject } from "../../src/domain/once-per-object.js";

describe("oncePerObject", () => {
  it("makes once per object, each time for other values, and keeps nothing for a throw", () => {
    let calls = 0;
    const encode = oncePerObject((value: unknown) => {
      calls++;
      if (value === "bad" || (typeof value === "object" && value !== null && "bad" in value)) throw new Error("cannot");
      return JSON.stringify(value);
    });
    const update = { state: "working" };
    expect(encode(update)).toBe('{"state":"working"}');
    expect(encode(update)).toBe('{"state":"working"}');
    expect(calls).toBe(1);
    expect(encode({ state: "working" })).toBe('{"state":"working"}');
    expect(calls).toBe(2);
    encode(7);
    encode(7);
    expect(calls).toBe(4);
    const bad = { bad: true };
    expect(() => encode(bad)).toThrow("cannot");
    expect(() => encode(bad)).toThrow("cannot");
    expect(calls).toBe(6);
  });
});
