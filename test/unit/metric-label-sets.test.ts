import { describe, expect, it } from "vitest";
import { labelSets } from "../../src/observability/metrics.js";

describe("labelSets", () => {
  it("gives the same frozen attribute object for the same values, in the order of the keys", () => {
    const labels = labelSets(["binding", "method", "outcome", "a2a.version"]);
    const first = labels("jsonrpc", "message/send", "200", "0.3");
    expect(first).toEqual({ binding: "jsonrpc", method: "message/send", outcome: "200", "a2a.version": "0.3" });
    expect(Object.isFrozen(first)).toBe(true);
    expect(labels("jsonrpc", "message/send", "200", "0.3")).toBe(first);
    expect(labels("jsonrpc", "message/send", "-32602", "0.3")).toEqual({
      binding: "jsonrpc",
      method: "message/send",
      outcome: "-32602",
      "a2a.version": "0.3",
    });
    expect(labels("http", "message/send", "200", "0.3")).not.toBe(first);
  });

  it("keeps label sets apart when values share prefixes", () => {
    const labels = labelSets(["from", "to"]);
    expect(labels("working", "completed")).toEqual({ from: "working", to: "completed" });
    expect(labels("completed", "working")).toEqual({ from: "completed", to: "working" });
    expect(labels("working", "completed")).toBe(labels("working", "completed"));
  });

  it("still answers past its bound, with a fresh object each time", () => {
    const labels = labelSets(["id"]);
    for (let i = 0; i < 4096; i++) labels(String(i));
    const past = labels("one more");
    expect(past).toEqual({ id: "one more" });
    expect(labels("one more")).not.toBe(past);
    expect(labels("7")).toBe(labels("7"));
  });

  it("takes at most four labels", () => {
    expect(() => labelSets(["a", "b", "c", "d", "e"])).toThrow(/at most four/);
  });
});
