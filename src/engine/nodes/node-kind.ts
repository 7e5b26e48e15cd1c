import type { A2AInvokeRunner } from "./a2a-invoke/a2a-invoke-runner.js";
import type { TaskHandler, WorkflowNode } from "../../workflows/workflow-types.js";
import type { NodeExecutor, NodeRuntime } from "./node-executor.js";

/**
 * One kind of workflow node, as one module: its node type (added to `WorkflowNodeTypes` in workflow-types.ts by
 * module augmentation), its load-time checks, whether a stateless skill may hold it, and its executor. The
 * registry (node-registry.ts) lists every kind, one line each; the loader, the engine and the driver read it.
 * Its JSON Schema fragment lives in schemas/workflow.schema.json (the published schema editors use), which a
 * unit test keeps in step with the registry.
 */
export interface NodeKind<N extends WorkflowNode> {
  /** May a stateless skill (`stateless: true`: runs at once, stores nothing) hold this kind? Default no. */
  stateless?: boolean;
  /** What the schema cannot say, checked when a definition is loaded: the problem (it names the node), or undefined. */
  check?(node: N, context: NodeCheckContext): string | undefined;
  /** Builds the kind's executor from what the host provides. */
  executor(runtime: NodeRuntime, services: NodeServices): NodeExecutor<N>;
}

/** What load-time checks see. */
export interface NodeCheckContext {
  handlers: Readonly<Record<string, TaskHandler>>;
  /** The variables definitions may reference as `${NAME}` (WORKFLOW_VARIABLES and A2A_PEER_CARD_URL): value, or undefined when not set. */
  variables: Readonly<Record<string, string | undefined>>;
  /** The named peers an `a2a.invoke` node may call (A2A_PEERS). */
  peers: readonly string[];
}

/**
 * The host's services executors may use. A kind that needs one of its own adds it from its module by
 * augmentation, as http-node.ts adds `httpRunner`; the host (task-supervisor.ts) provides it.
 */
export interface NodeServices {
  handlers: Record<string, TaskHandler>;
  peerInvoker: A2AInvokeRunner;
}

/** One entry per node kind. */
export type NodeKinds = { [K in WorkflowNode["kind"]]: NodeKind<Extract<WorkflowNode, { kind: K }>> };
