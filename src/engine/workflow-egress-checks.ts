import { checkEgressUrlSyntax, EgressRefusedError, type EgressPolicy } from "../egress/egress-guard.js";
import { VARIABLE_REFERENCE } from "../workflows/workflow-variables.js";
import type { WorkflowDefinition } from "../workflows/workflow-types.js";

/** The egress policies a definition's URLs will meet: the `http` kind's (HTTP_NODE_*) and the peers' (A2A_PEER_*). */
export interface LoadEgressPolicies {
  http?: EgressPolicy;
  peer?: EgressPolicy;
}

/**
 * The URLs the egress guard will refuse, found at load instead of when the node runs: an `http` node's url and an
 * `a2a.invoke` node's agentCardUrl, once their `${NAME}` references are filled in (one still unset cannot be
 * checked: its own problem says so). Only the guard's synchronous arms (scheme, literal and internal addresses,
 * ports, allow and deny lists); a name is resolved only when the node runs. Each refusal names the setting that
 * would allow the target (HTTP_NODE_PRIVATE_HOSTS, A2A_PEER_ALLOWED_PORTS, …).
 */
export function refusedUrlProblems(
  workflow: WorkflowDefinition,
  policies: LoadEgressPolicies,
  variables: Readonly<Record<string, string | undefined>>,
): string[] {
  const problems: string[] = [];
  for (const node of workflow.nodes) {
    const [written, policy, field] =
      node.kind === "http"
        ? [node.url, policies.http, "url"]
        : node.kind === "a2a.invoke" && node.peer === undefined
          ? [node.agentCardUrl, policies.peer, "agentCardUrl"]
          : [undefined, undefined, ""];
    if (written === undefined || policy === undefined) continue;
    let unset = false;
    const url = written.replace(new RegExp(VARIABLE_REFERENCE.source, "g"), (whole, name: string) => {
      const value = variables[name];
      if (value === undefined) unset = true;
      return value ?? whole;
    });
    if (unset) continue;
    try {
      checkEgressUrlSyntax(url, policy, `${node.kind} node`);
    } catch (err) {
      if (!(err instanceof EgressRefusedError)) throw err;
      problems.push(`node "${node.id}": its ${field} will be refused when it runs: ${err.reason}`);
    }
  }
  return problems;
}
