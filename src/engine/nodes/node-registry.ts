import type { TaskNode, WorkflowNode } from "../../workflows/workflow-types.js";
import { a2aInvokeNodeKind } from "./a2a-invoke/a2a-invoke-node.js";
import { delayNodeKind } from "./delay-node.js";
import { approvalNodeKind } from "./gates/approval-node.js";
import { clarificationNodeKind } from "./gates/clarification-node.js";
import { httpNodeKind } from "./http/http-node.js";
import type { NodeCheckContext, NodeHostDeps, NodeKind, NodeRoute, NodeServices } from "./node-kind.js";
import { switchNodeKind } from "./switch-node.js";
import type { NodeExecutors, NodeRuntime } from "./node-executor.js";
import { taskNodeKind } from "./task-node.js";

/** Node kinds by name. */
export type NodeKindTable = Readonly<Record<string, NodeKind<never>>>;

/**
 * Every node kind shipped in src, one line each. A new kind: its folder (its NodeKind; see node-kind.ts and
 * http/http-node.ts), one line here, its node type in workflow-types.ts and its fragment in
 * schemas/workflow.schema.json. Built on first use, so the modules it names are all evaluated by then.
 */
function builtinTable(): NodeKindTable {
  return {
    task: taskNodeKind,
    delay: delayNodeKind,
    approval: approvalNodeKind,
    clarification: clarificationNodeKind,
    "a2a.invoke": a2aInvokeNodeKind,
    switch: switchNodeKind,
    http: httpNodeKind,
  } satisfies { [K in WorkflowNode["kind"]]: NodeKind<Extract<WorkflowNode, { kind: K }>> } as unknown as NodeKindTable;
}

/**
 * The node kinds one host runs: the built-in ones plus any given to createCore (`nodeKinds`, e.g. a test's own
 * kind). The loader, the engine, the supervisor, the routes and the console ask it; none of them names a kind.
 */
export class NodeKindRegistry {
  private readonly kinds: NodeKindTable;

  constructor(extra: NodeKindTable = {}) {
    const builtin = builtinTable();
    for (const name of Object.keys(extra)) if (Object.hasOwn(builtin, name)) throw new Error(`node kind "${name}" is built in; give the extra kind another name`);
    this.kinds = { ...builtin, ...extra };
  }

  /** The kind named `kind`, or undefined when this host has none by that name. */
  of(kind: string): NodeKind<never> | undefined {
    return Object.hasOwn(this.kinds, kind) ? this.kinds[kind] : undefined;
  }

  /** Every kind's name. */
  names(): string[] {
    return Object.keys(this.kinds);
  }

  /** The kinds a stateless skill may hold. */
  statelessNames(): string[] {
    return Object.entries(this.kinds).flatMap(([name, kind]) => (kind.stateless ? [name] : []));
  }

  /** The schema fragments of kinds the published schema does not hold (by name): the validator adds them. */
  extraSchemas(): Record<string, Record<string, unknown>> {
    return Object.fromEntries(Object.entries(this.kinds).flatMap(([name, kind]) => (kind.schema ? [[name, kind.schema]] : [])));
  }

  /**
   * The load-time checks of a node's kind (after the schema): the problem, or undefined. A kind this host does not
   * have is a problem too.
   */
  problem(node: { kind: string; id: string }, context: NodeCheckContext): string | undefined {
    const kind = this.of(node.kind) as NodeKind<TaskNode> | undefined;
    if (!kind) return `node "${node.id}": node kind "${node.kind}" is not supported by this host yet`;
    return kind.check?.(node as TaskNode, context);
  }

  /** Every kind's services, built from the host's; `close` closes what they opened. */
  createServices(deps: NodeHostDeps, handlers: NodeServices["handlers"]): { services: NodeServices; close(): Promise<void> } {
    const parts = Object.values(this.kinds).map((kind) => kind.createServices?.(deps));
    const services = Object.assign({ handlers }, ...parts.map((p) => p?.services ?? {})) as NodeServices;
    return { services, close: async () => void (await Promise.all(parts.map((p) => p?.close?.()))) };
  }

  /** Every kind's HTTP routes. */
  routes(services: NodeServices): NodeRoute[] {
    return Object.values(this.kinds).flatMap((kind) => kind.routes?.(services) ?? []);
  }

  /** The executor of every node kind. */
  executors(runtime: NodeRuntime, services: NodeServices): NodeExecutors {
    return Object.fromEntries(Object.entries(this.kinds).map(([name, kind]) => [name, kind.executor(runtime, services)])) as unknown as NodeExecutors;
  }
}

let builtin: NodeKindRegistry | undefined;

/** The built-in kinds only (the default wherever no host registry is given). */
export function builtinNodeKinds(): NodeKindRegistry {
  return (builtin ??= new NodeKindRegistry());
}

/** The built-in kind named `kind`, or undefined. */
export function nodeKindOf(kind: string): NodeKind<never> | undefined {
  return builtinNodeKinds().of(kind);
}

/** The built-in kinds a stateless skill may hold. */
export function statelessNodeKinds(): string[] {
  return builtinNodeKinds().statelessNames();
}

/** Every built-in kind's name. */
export function nodeKindNames(): string[] {
  return builtinNodeKinds().names();
}
