// The node-kind registry (src/engine/nodes/node-registry.ts) and the published workflow schema agree: every
// registered kind has its fragment in schemas/workflow.schema.json (enum entry, if/then branch, $def), and the
// schema names no kind the host cannot run. The loader refuses unknown kinds and non-stateless kinds in a
// stateless skill by asking the registry.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkWorkflow } from "../../src/engine/workflow-catalog.js";
import { nodeKindNames, nodeKindOf, statelessNodeKinds } from "../../src/engine/nodes/node-registry.js";
import { schemasDirectory } from "../../src/schemas/schema-validator.js";

type Schema = { $defs: Record<string, any> };

describe("node kinds", () => {
  const schema = JSON.parse(readFileSync(join(schemasDirectory(), "workflow.schema.json"), "utf8")) as Schema;
  const node = schema.$defs["Node"];
  const branches = new Map<string, string>(
    node.allOf.map((b: any) => [b.if.properties.kind.const, String(b.then.$ref).replace("#/$defs/", "")]),
  );

  it("every registered kind has its schema fragment, and the schema has no kind the registry lacks", () => {
    for (const kind of nodeKindNames()) {
      expect(node.properties.kind.enum, `add "${kind}" to $defs.Node.properties.kind.enum`).toContain(kind);
      const def = branches.get(kind);
      expect(def, `add an if/then branch for "${kind}" to $defs.Node.allOf`).toBeDefined();
      expect(schema.$defs[def!]?.properties?.kind?.const, `$defs.${def} must be the schema of "${kind}" nodes`).toBe(
        kind,
      );
    }
    // In the registry's order, so an unknown kind's message lists them as the registry does.
    expect(node.properties.kind.enum).toEqual(nodeKindNames());
    expect([...branches.keys()].sort()).toEqual(nodeKindNames().sort());
  });

  it("the loader asks the registry: kinds, their checks, and which kinds a stateless skill may hold", () => {
    expect(nodeKindOf("http")).toBeDefined();
    expect(nodeKindOf("toString")).toBeUndefined();
    expect(statelessNodeKinds()).toEqual(["task", "switch"]);
    const stateless = {
      id: "s",
      name: "S",
      description: "",
      stateless: true,
      nodes: [{ kind: "http", id: "call", url: "https://svc.example.com/x" }],
    };
    expect(() => checkWorkflow(stateless, {})).toThrow(
      'node "call": a stateless workflow may only hold task and switch nodes (found "http")',
    );
    const bad = {
      id: "s",
      name: "S",
      description: "",
      nodes: [{ kind: "http", id: "call", url: "ftp://svc.example.com/x" }],
    };
    expect(() => checkWorkflow(bad, {})).toThrow(
      'node "call": url must be an absolute http(s) URL (got "ftp://svc.example.com/x")',
    );
    const ok = {
      id: "s",
      name: "S",
      description: "",
      nodes: [{ kind: "http", id: "call", url: "${SVC}/x", headers: { Authorization: "Bearer ${SVC_TOKEN}" } }],
    };
    const loaded = checkWorkflow(ok, {}, { SVC: "https://svc.example.com", SVC_TOKEN: "t0ps3cret" });
    // References stay in the definition: values are resolved when the request is sent.
    expect(loaded.nodes[0]).toEqual(ok.nodes[0]);
  });
});
