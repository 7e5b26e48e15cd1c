import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/domain/task-record.js";
import { runEventV2, type V2EventView } from "../../src/runs/run-v2-events.js";

// The edges the integration test does not reach: values a store gives back as null, an error with no code, a node
// the deployed definition lacks, a kind outside the typeId grammar, a stored key v2 has no seat for.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const validate = (() => {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
  addFormats(ajv);
  const path = new URL("../fixtures/openwop-v2/run-event-payloads-excerpt.schema.json", import.meta.url);
  return ajv.compile(JSON.parse(readFileSync(path, "utf8")) as object);
})();

const RUN = "3f0c2a54-8a7e-4c1e-9d39-3b1f6f0e2b11";
const KINDS = new Map([
  ["work", "task"],
  ["Odd", "Not A Kind"],
]);
const VIEW: V2EventView = {
  tenant: "acme",
  owner: {
    tenant: "acme",
    subject: { issuer: "urn:openwop:legacy", subjectId: "apikey:acme", tenant: "acme", lane: "api-key", kind: "user" },
  },
  kindOf: (nodeId) => KINDS.get(nodeId),
};

function v2(type: string, payload: Record<string, unknown>, extra: Partial<RunEvent> = {}): Record<string, any> {
  const doc = runEventV2(
    { eventId: `${RUN}:4`, runId: RUN, type, payload, timestamp: "2026-11-29T02:00:00.000Z", sequence: 4, ...extra },
    VIEW,
  )!;
  expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
  return doc;
}

describe("runEventV2: the closed v2 payloads from stored events", () => {
  it("leaves out unset keys, null ones included (a store may give back undefined as null)", () => {
    expect(v2("run.cancelled", { reason: null, durationMs: null }).payload).toEqual({});
    expect(v2("run.resumed", { resumedBy: "apikey:acme", reason: null }).payload).toEqual({ resumedBy: "apikey:acme" });
  });

  it("gives an error with no code or message the registry's fallback, and carries its other keys", () => {
    const doc = v2("node.failed", { nodeId: "work", error: { nodeId: "work", details: { a: 1 } } }, { nodeId: "work" });
    expect(doc.payload.error).toEqual({
      code: "internal_error",
      message: "the run failed",
      details: { a: 1 },
      "vendor.openwop-a2a-host.nodeId": "work",
    });
  });

  it("names a node's type by its kind, else the host's generic node type", () => {
    expect(v2("node.started", { nodeId: "work", attempt: 2 }).payload).toEqual({
      nodeId: "work",
      typeId: "vendor.openwop-a2a-host.task",
      attempt: 1,
    });
    expect(v2("node.started", { nodeId: "gone", attempt: 1 }).payload.typeId).toBe("vendor.openwop-a2a-host.node");
    expect(v2("node.started", { nodeId: "Odd", attempt: 1 }).payload.typeId).toBe("vendor.openwop-a2a-host.node");
  });

  it("carries a stored key v2 has no seat for under the host's extension key; a restated one is left out", () => {
    const resolved = v2(
      "interrupt.resolved",
      { runId: RUN, nodeId: "gate", interruptId: "0123456789abcdef", kind: "approval", resolvedAt: "x", note: "n" },
      { nodeId: "gate" },
    );
    expect(resolved.payload).toEqual({
      nodeId: "gate",
      interruptId: "acme/0123456789abcdef",
      kind: "approval",
      "vendor.openwop-a2a-host.note": "n",
    });
    const chunk = v2(
      "output.chunk",
      { nodeId: "work", artifactId: "a", append: true, lastChunk: true },
      {
        a2a: {
          artifact: {
            artifactId: "a",
            parts: [
              { kind: "text", text: "n=" },
              { kind: "data", data: { n: 1 } },
            ],
          },
        },
      },
    );
    expect(chunk.payload).toEqual({
      nodeId: "work",
      runId: `acme/${RUN}`,
      chunk: 'n={"n":1}',
      isLast: true,
      "vendor.openwop-a2a-host.artifactId": "a",
      "vendor.openwop-a2a-host.append": true,
    });
  });

  it("serves no type without a rule (the host's own and the OpenWOP 1 interrupt events)", () => {
    for (const type of ["run.created", "node.progress", "approval.requested", "openwop-a2a-host.run.retried"])
      expect(runEventV2({ eventId: "e", runId: RUN, type, payload: {}, timestamp: "t", sequence: 0 }, VIEW)).toBe(
        undefined,
      );
  });
});
