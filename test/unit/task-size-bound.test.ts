import { describe, expect, it } from "vitest";
import type { DomainError } from "../../src/domain/errors.js";
import { assertMessageSize, assertWriteSize, jsonBytes } from "../../src/store/task-size-limits.js";

/**
 * The size checks decide from an upper bound when it is under the limit and from the exact JSON size otherwise:
 * at the limit, and one byte under it, they must refuse exactly what the exact size refuses, whatever the
 * content (escapes, multi-byte and astral characters, lone surrogates, numbers, dates, undefined members).
 */
const samples: Record<string, unknown> = {
  ascii: { kind: "message", messageId: "m-1", parts: [{ kind: "text", text: "hello world" }] },
  escapes: { messageId: "m-2", text: '\u0000\u0001"\\\n\t', list: ["\u001f", null, undefined, () => 1] },
  unicode: { messageId: "m-3", text: "héllo ✓ 𝄞 \ud800", "clé ✓": "€".repeat(100) },
  numbers: { messageId: "m-4", values: [-1.2345678901234567e-308, Number.MAX_VALUE, NaN, Infinity, 0, -0, 1e21] },
  dates: {
    messageId: "m-5",
    at: new Date(0),
    bad: new Date(Number.NaN),
    nested: { deep: [[[{ x: true, y: false }]]] },
  },
  custom: { messageId: "m-6", custom: { toJSON: () => "x".repeat(50) }, boxed: new String("abc") },
};

describe("size checks: the bound never changes what is refused", () => {
  for (const [name, value] of Object.entries(samples)) {
    it(name, () => {
      const exact = jsonBytes(value);
      const message = value as { messageId: string };
      for (const limit of [exact, exact - 1, exact * 6, 1]) {
        const limits = { maxMessageBytes: limit, maxArtifactBytes: limit, maxTaskBytes: limit };
        const refusedMessage = (() => {
          try {
            assertMessageSize(message, limits);
            return undefined;
          } catch (err) {
            return err;
          }
        })();
        expect(refusedMessage === undefined, `message at limit ${limit}`).toBe(exact <= limit);
        if (refusedMessage)
          expect((refusedMessage as DomainError).details).toMatchObject({ sizeBytes: exact, limitBytes: limit });
        const headExact = jsonBytes(value) + jsonBytes({ state: "working" });
        const head = { taskId: "t-1", snapshot: value, a2a: { state: "working" } };
        const artifact = { artifactId: "a-1", parts: [{ kind: "data", data: value }] };
        const refusedHead = (() => {
          try {
            assertWriteSize(head, [], { ...limits, maxTaskBytes: limit + jsonBytes({ state: "working" }) });
            return undefined;
          } catch (err) {
            return err;
          }
        })();
        expect(refusedHead === undefined, `head at limit ${limit}`).toBe(
          headExact <= limit + jsonBytes({ state: "working" }),
        );
        const refusedArtifact = (() => {
          try {
            assertWriteSize({ taskId: "t-1", snapshot: {}, a2a: {} }, [{ a2a: { artifact: artifact as never } }], {
              ...limits,
              maxTaskBytes: 1e9,
            });
            return undefined;
          } catch (err) {
            return err;
          }
        })();
        expect(refusedArtifact === undefined, `artifact at limit ${limit}`).toBe(jsonBytes(artifact) <= limit);
      }
    });
  }

  it("a cycle still fails as JSON.stringify fails, never with a stack overflow", () => {
    const cyclic: Record<string, unknown> = { messageId: "m-7" };
    cyclic["self"] = cyclic;
    expect(() =>
      assertMessageSize(cyclic as { messageId: string }, {
        maxMessageBytes: 1e9,
        maxArtifactBytes: 1e9,
        maxTaskBytes: 1e9,
      }),
    ).toThrow(TypeError);
  });
});
