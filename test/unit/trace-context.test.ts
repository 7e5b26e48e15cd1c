// W3C trace context in an A2A message's metadata.openwop (OpenWOP v2 interop.md "Trace context"): what is read from
// a received message (a well-formed traceparent and a tracestate that fits, nothing else) and what is written into
// one we send (the rest of the metadata kept).
import { describe, expect, it } from "vitest";
import type { Message } from "../../src/domain/a2a-types.js";
import { messageTraceContext, parseTraceparent, withTraceContext } from "../../src/domain/trace-context.js";

const GOOD = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const message = (metadata?: Record<string, unknown>): Message => ({
  messageId: "m",
  role: "user",
  parts: [{ kind: "text", text: "hi" }],
  ...(metadata ? { metadata } : {}),
});

describe("trace context in metadata.openwop", () => {
  it("reads a well-formed traceparent, with its tracestate", () => {
    expect(messageTraceContext(message({ openwop: { traceparent: GOOD, tracestate: "a=1,b=2" } }))).toEqual({
      traceparent: GOOD,
      tracestate: "a=1,b=2",
    });
    expect(parseTraceparent(GOOD)).toEqual({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      parentId: "00f067aa0ba902b7",
      flags: "01",
    });
  });

  it.each([
    ["no metadata", undefined],
    ["no openwop", { skillId: "x" }],
    ["openwop not an object", { openwop: "00-…" }],
    ["a number", { openwop: { traceparent: 42 } }],
    ["upper-case hex", { openwop: { traceparent: GOOD.toUpperCase() } }],
    ["an all-zero trace id", { openwop: { traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01" } }],
    ["an all-zero parent id", { openwop: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01" } }],
    ["another version", { openwop: { traceparent: GOOD.replace(/^00/, "01") } }],
    ["a short trace id", { openwop: { traceparent: "00-4bf92f35-00f067aa0ba902b7-01" } }],
  ])("ignores %s", (_name, metadata) => {
    expect(messageTraceContext(message(metadata as Record<string, unknown> | undefined))).toBeUndefined();
  });

  it("drops a tracestate that is malformed or too long, keeping the traceparent", () => {
    for (const tracestate of ["no-equals-sign", "a=1,".repeat(200) + "b=2", 7])
      expect(messageTraceContext(message({ openwop: { traceparent: GOOD, tracestate } }))).toEqual({
        traceparent: GOOD,
      });
  });

  it("writes into metadata.openwop, replacing an older trace and keeping every other member", () => {
    const before = message({ skillId: "s", openwop: { interruptToken: "t", traceparent: "old", tracestate: "x=1" } });
    expect(withTraceContext(before, { traceparent: GOOD }).metadata).toEqual({
      skillId: "s",
      openwop: { interruptToken: "t", traceparent: GOOD },
    });
    expect(before.metadata?.["openwop"]).toMatchObject({ traceparent: "old" });
  });
});
