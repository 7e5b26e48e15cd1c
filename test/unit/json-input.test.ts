import { describe, expect, it } from "vitest";
import * as pb from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { withoutUnknownFields } from "../../src/a2a/proto-json-unknown-fields.js";
import { canonicalJson } from "../../src/domain/canonical-json.js";
import { DomainError } from "../../src/domain/errors.js";
import { nestingDepth, parseJsonBody, wireSafeObject, WIRE_MAX_DEPTH } from "../../src/domain/json-input.js";

const nest = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { k: value };
  return value;
};

function codeOf(fn: () => unknown): string {
  try {
    fn();
    return "ok";
  } catch (err) {
    return err instanceof DomainError ? err.code : "other";
  }
}

describe("reading untrusted JSON", () => {
  it("canonicalJson sorts keys, drops undefined members, writes undefined array items as null, and survives 100 000 levels", () => {
    expect(canonicalJson({ b: 1, a: [undefined, { d: undefined, c: "x" }], e: null })).toBe(
      '{"a":[null,{"c":"x"}],"b":1,"e":null}',
    );
    expect(canonicalJson(undefined)).toBe("null");
    expect(canonicalJson([])).toBe("[]");
    expect(canonicalJson({})).toBe("{}");
    const deep = nest(100_000);
    const text = canonicalJson(deep);
    expect(text.startsWith('[{"k":[{"k":')).toBe(true);
    expect(text.length).toBeGreaterThan(300_000);
    // The same as JSON.stringify where keys are already sorted.
    const sample = { a: [1, "two", { b: true, c: null }], d: { e: [[]] } };
    expect(canonicalJson(sample)).toBe(JSON.stringify(sample));
  });

  it("nestingDepth counts objects and arrays without recursion and stops early", () => {
    expect(nestingDepth(1)).toBe(0);
    expect(nestingDepth({})).toBe(1);
    expect(nestingDepth({ a: [1, { b: {} }] })).toBe(4);
    expect(nestingDepth(nest(200_000))).toBe(200_000);
    expect(nestingDepth(nest(200_000), 10)).toBe(11);
  });

  it("parseJsonBody: not UTF-8 or not JSON is a parse error; deeper than the bound (plus the envelope) is invalid params", () => {
    expect(codeOf(() => parseJsonBody(Buffer.from([0x7b, 0xff, 0x7d]), 32))).toBe("parse-error");
    expect(codeOf(() => parseJsonBody(Buffer.from("{oops"), 32))).toBe("parse-error");
    expect(parseJsonBody(Buffer.from('{"é":"ü"}'), 32)).toEqual({ é: "ü" });
    expect(codeOf(() => parseJsonBody(Buffer.from(JSON.stringify(nest(40))), 32))).toBe("ok");
    expect(codeOf(() => parseJsonBody(Buffer.from(JSON.stringify(nest(41))), 32))).toBe("invalid-params");
    expect(codeOf(() => parseJsonBody(Buffer.from("[".repeat(50_000) + "]".repeat(50_000)), 32))).toBe(
      "invalid-params",
    );
  });

  it("wireSafeObject keeps what the wire carries and replaces deeper values by a marker", () => {
    expect(wireSafeObject({ a: { b: 1 }, u: undefined })).toEqual({ a: { b: 1 } });
    expect(Object.keys(wireSafeObject({ a: nest(WIRE_MAX_DEPTH) }))).toEqual(["unencodable"]);
  });

  it("withoutUnknownFields drops unknown members at every message level, keeps free-form Struct content, and leaves its input alone", () => {
    const input = {
      message: {
        messageId: "m",
        colour: 1,
        parts: [{ text: "t", shape: "round" }],
        metadata: { anything: { goes: true } },
      },
      configuration: { history_length: 2, speed: "fast" },
      bogus: [1],
    };
    const copy = structuredClone(input);
    expect(withoutUnknownFields(pb.SendMessageRequestSchema, input)).toEqual({
      message: { messageId: "m", parts: [{ text: "t" }], metadata: { anything: { goes: true } } },
      configuration: { history_length: 2 },
    });
    expect(input).toEqual(copy);
    // Wrong types are left for the strict reader to refuse.
    expect(withoutUnknownFields(pb.GetTaskRequestSchema, { id: 7 })).toEqual({ id: 7 });
  });
});
