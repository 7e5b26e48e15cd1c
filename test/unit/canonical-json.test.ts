import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/domain/canonical-json.js";

/** Stored idempotency fingerprints hash this text: its rules must not change with how it is written. */
describe("canonicalJson", () => {
  it("writes functions and symbols as null, skips array holes as forEach does, and reads only own enumerable keys", () => {
    const inherited = Object.create({ inherited: 1 }, { own: { value: 2, enumerable: true }, hidden: { value: 3, enumerable: false } }) as object;
    // eslint-disable-next-line no-sparse-arrays
    const holes = [, 1, , 2];
    expect(canonicalJson({ f: () => 1, s: Symbol("x"), u: undefined, d: new Date(0), n: NaN, i: inherited, h: holes, list: [undefined, () => 1] })).toBe(
      '{"d":{},"f":null,"h":[,1,2],"i":{"own":2},"list":[null,null],"n":null,"s":null}',
    );
    expect(canonicalJson({ b: 1, "é": 2, Z: 3, "10": 4, "9": 5 })).toBe('{"10":4,"9":5,"Z":3,"b":1,"é":2}');
    expect(() => canonicalJson({ a: 1n })).toThrow(TypeError);
  });

  it("writes the same text on either side of the depth where the stack walk takes over", () => {
    for (const depth of [150, 199, 200, 201, 260]) {
      let value: unknown = { a: 1, b: [true, "x"] };
      for (let i = 0; i < depth; i++) value = i % 2 ? { k: value, z: i } : [value, i];
      expect(canonicalJson(value), `depth ${depth}`).toBe(JSON.stringify(value));
    }
  });
});
