import type { TaskNode } from "../../workflows/workflow-types.js";
import { a2aInvokeNodeKind } from "./a2a-invoke/a2a-invoke-node.js";
import { delayNodeExecutor } from "./delay-node.js";
import { gateNodeExecutor } from "./gate-node.js";
import { httpNodeKind } from "./http/http-node.js";
import type { NodeCheckContext, NodeKind, NodeKinds, NodeServices } from "./node-kind.js";
import { switchNodeExecutor } from "./switch-node.js";
import type { NodeExecutors, NodeRuntime } from "./node-executor.js";
import { taskNodeExecutor } from "./task-node.js";

/**
 * Every node kind, one line each. A new kind: one module exporting its NodeKind (its node type, checks and
 * executor; see node-kind.ts and http-node.ts), one line here, and its fragment in schemas/workflow.schema.json.
 * Built on first use, so the modules it names are all evaluated by then.
 */
let kinds: NodeKinds | undefined;

function registry(): NodeKinds {
  return (kinds ??= {
    task: { stateless: true, executor: (runtime, s) => taskNodeExecutor(runtime, s.handlers) },
    delay: { executor: (runtime) => delayNodeExecutor(runtime) },
    approval: { executor: (runtime) => gateNodeExecutor(runtime) },
    clarification: { executor: (runtime) => gateNodeExecutor(runtime) },
    "a2a.invoke": a2aInvokeNodeKind,
    switch: { stateless: true, executor: (runtime) => switchNodeExecutor(runtime) },
    http: httpNodeKind,
  });
}

/** The kind named `kind`, or undefined when this host has none by that name. */
export function nodeKindOf(kind: string): NodeKind<never> | undefined {
  return Object.hasOwn(registry(), kind) ? (registry()[kind as keyof NodeKinds] as NodeKind<never>) : undefined;
}

/** The kinds a stateless skill may hold. */
export function statelessNodeKinds(): string[] {
  return Object.entries(registry()).flatMap(([name, kind]) => (kind.stateless ? [name] : []));
}

/** Every kind's name. */
export function nodeKindNames(): string[] {
  return Object.keys(registry());
}

/**
 * The load-time checks of a node's kind (after the schema): the problem, or undefined. A kind this host does not
 * have is a problem too. (The loader checks task handlers itself: it can collect every missing one at once.)
 */
export function nodeProblem(node: { kind: string; id: string }, context: NodeCheckContext): string | undefined {
  const kind = nodeKindOf(node.kind) as NodeKind<TaskNode> | undefined;
  if (!kind) return `node "${node.id}": node kind "${node.kind}" is not supported by this host yet`;
  return kind.check?.(node as TaskNode, context);
}

/** The executor of every node kind. */
export function nodeExecutors(runtime: NodeRuntime, services: NodeServices): NodeExecutors {
  return Object.fromEntries(Object.entries(registry()).map(([name, kind]) => [name, kind.executor(runtime, services)])) as unknown as NodeExecutors;
}
