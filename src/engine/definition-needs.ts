import { createHash } from "node:crypto";
import { canonicalJson } from "../domain/canonical-json.js";
import type { NodeKindRegistry } from "./nodes/node-registry.js";
import { WORKFLOW_VARIABLE_NAMES, type WorkflowVariables } from "./workflow-catalog.js";
import type { TaskHandler, WorkflowDefinition } from "../workflows/workflow-types.js";

/** What this deploy brings that a definition's nodes may need: code (handlers, kinds) and settings (peers, variables). */
export interface DeployContext {
  handlers: Readonly<Record<string, TaskHandler>>;
  variables: WorkflowVariables;
  /** The named peers (A2A_PEERS): name → card URL (or url). */
  peers: Readonly<Record<string, string>>;
  kinds: NodeKindRegistry;
}

/** A definition's identity: its `version` when it sets one, else a digest of its canonical form; and its content digest. */
export function versionOf(asWritten: WorkflowDefinition | Record<string, unknown>): {
  version: string;
  digest: string;
} {
  const digest = createHash("sha256").update(canonicalJson(asWritten)).digest("hex");
  const declared = (asWritten as { version?: unknown }).version;
  return {
    version: typeof declared === "string" && declared !== "" ? declared : `sha256-${digest.slice(0, 16)}`,
    digest,
  };
}

/** The node kinds a definition uses, sorted. */
export function kindsOf(definition: { nodes?: unknown }): string[] {
  const nodes = Array.isArray(definition.nodes) ? (definition.nodes as Array<{ kind?: unknown }>) : [];
  return [...new Set(nodes.flatMap((n) => (typeof n?.kind === "string" ? [n.kind] : [])))].sort();
}

/**
 * A stored definition (as its author wrote it), made walkable by this deploy: each node expanded with this
 * instance's variables and peers, and each node's kind checks run against its handlers, peers and kinds. A node
 * whose check fails is not refused (the definition was valid where it was served): it is what this deploy lacks,
 * and a run reaching it waits for an instance that has it. The loader's per-node steps, without the schema and the
 * whole-definition checks, which the deploy that stored it ran.
 */
export function walkable(
  definition: Record<string, unknown>,
  deploy: DeployContext,
): { workflow: WorkflowDefinition; lacks: Map<string, string> } {
  const checkContext = {
    handlers: deploy.handlers,
    variables: { ...Object.fromEntries(WORKFLOW_VARIABLE_NAMES.map((n) => [n, undefined])), ...deploy.variables },
    peers: Object.keys(deploy.peers),
  };
  const expandContext = { variables: deploy.variables, known: WORKFLOW_VARIABLE_NAMES, peers: deploy.peers };
  const lacks = new Map<string, string>();
  const nodes = (Array.isArray(definition["nodes"]) ? definition["nodes"] : []) as Array<Record<string, unknown>>;
  const expanded = nodes.map((node) => {
    const id = String(node["id"]);
    const kindName = String(node["kind"]);
    const kind = deploy.kinds.of(kindName);
    if (!kind) {
      lacks.set(id, `node "${id}": node kind "${kindName}" is not installed on this instance`);
      return node;
    }
    const problems: string[] = [];
    const result = kind.expand?.(node, expandContext, problems);
    const walked = (result ? result.node : node) as { kind: string; id: string };
    const precheck = kind.precheck?.(node, checkContext);
    if (precheck) problems.push(precheck);
    const problem = problems.length === 0 ? deploy.kinds.problem(walked, checkContext) : undefined;
    if (problem) problems.push(problem);
    if (problems.length > 0) lacks.set(id, problems.join("; "));
    return walked;
  });
  return { workflow: { ...definition, nodes: expanded } as unknown as WorkflowDefinition, lacks };
}
