import type { WorkflowNode } from "../../workflows/workflow-types.js";
import { a2aInvokeNodeKind } from "./a2a-invoke/a2a-invoke-node.js";
import { delayNodeKind } from "./delay-node.js";
import { approvalNodeKind } from "./gates/approval-node.js";
import { clarificationNodeKind } from "./gates/clarification-node.js";
import { httpNodeKind } from "./http/http-node.js";
import type { NodeBase, NodeCheckContext, NodeHostDeps, EngineNodeKind, NodeRoute, NodeSeams } from "./node-kind.js";
import { switchNodeKind } from "./switch-node.js";
import type { NodeExecutors, NodeRuntime } from "./node-executor.js";
import { taskNodeKind } from "./task-node.js";
import { pluginNodeKinds } from "./plugin-node-kind.js";

/** Any kind, whatever its node type, services and payload (each kind reads only its own nodes and services). */
export type AnyEngineNodeKind = EngineNodeKind<NodeBase, unknown, unknown>;

/** Node kinds by name. */
export type NodeKindTable = Readonly<Record<string, AnyEngineNodeKind>>;

/** Each kind's services, by kind name (what its createServices built; none for a kind without one). */
export type NodeServicesByKind = Readonly<Record<string, unknown>>;

/**
 * Every node kind shipped in src, one line each, in the order of the published schema's `kind` enum. A new kind:
 * its folder (its EngineNodeKind; see node-kind.ts and http/http-node.ts), one line here, its node type in
 * workflow-types.ts and its fragment in schemas/workflow.schema.json. Built on first use, so the modules it names
 * are all evaluated by then.
 */
function builtinTable(): NodeKindTable {
  return {
    task: taskNodeKind,
    approval: approvalNodeKind,
    clarification: clarificationNodeKind,
    delay: delayNodeKind,
    "a2a.invoke": a2aInvokeNodeKind,
    switch: switchNodeKind,
    http: httpNodeKind,
  } satisfies BuiltinKinds as unknown as NodeKindTable;
}

/** Each built-in kind for its own node type; its services and payload are its own, so only the node type is checked here. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
type BuiltinKinds = { [K in WorkflowNode["kind"]]: EngineNodeKind<Extract<WorkflowNode, { kind: K }>, any, any> };

/**
 * The node kinds one host runs: the built-in ones plus the plugin kinds given to it (startHost's `nodeKinds`,
 * HANDLERS_MODULE's, createCore's; see withPluginKinds). The loader, the engine, the supervisor, the routes and the console ask it; none of them names a kind.
 */
export class NodeKindRegistry {
  private readonly kinds: NodeKindTable;

  constructor(extra: NodeKindTable = {}) {
    const builtin = builtinTable();
    for (const name of Object.keys(extra))
      if (Object.hasOwn(builtin, name))
        throw new Error(`node kind "${name}" is built in; give the extra kind another name`);
    this.kinds = { ...builtin, ...extra };
  }

  /** The kind named `kind`, or undefined when this host has none by that name. */
  of(kind: string): AnyEngineNodeKind | undefined {
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
    return Object.fromEntries(
      Object.entries(this.kinds).flatMap(([name, kind]) => (kind.schema ? [[name, kind.schema]] : [])),
    );
  }

  /**
   * The load-time checks of a node's kind (after the schema): the problem, or undefined. A kind this host does not
   * have is a problem too.
   */
  problem(node: { kind: string; id: string }, context: NodeCheckContext): string | undefined {
    const kind = this.of(node.kind);
    if (!kind) return `node "${node.id}": node kind "${node.kind}" is not supported by this host yet`;
    return kind.check?.(node, context);
  }

  /** Every kind's services, built from the host's generic pieces; `close` closes what they opened. */
  createServices(deps: NodeHostDeps): { services: NodeServicesByKind; close(): Promise<void> } {
    const parts = Object.entries(this.kinds).flatMap(([name, kind]) => {
      const made = kind.createServices?.(deps);
      return made ? [[name, made] as const] : [];
    });
    const services = Object.fromEntries(parts.map(([name, made]) => [name, made.services]));
    return { services, close: async () => void (await Promise.all(parts.map(([, made]) => made.close?.()))) };
  }

  /** Every kind's HTTP routes. */
  routes(services: NodeServicesByKind): NodeRoute[] {
    return Object.entries(this.kinds).flatMap(([name, kind]) => kind.routes?.(services[name]) ?? []);
  }

  /** The conformance seams the kinds serve (the first kind offering a seam serves it). */
  seams(services: NodeServicesByKind): NodeSeams {
    const seams: NodeSeams = {};
    for (const [name, kind] of Object.entries(this.kinds))
      for (const [seam, impl] of Object.entries(kind.seams?.(services[name]) ?? {}))
        (seams as Record<string, unknown>)[seam] ??= impl;
    return seams;
  }

  /** The executor of every node kind. */
  executors(runtime: NodeRuntime, services: NodeServicesByKind): NodeExecutors {
    return Object.fromEntries(
      Object.entries(this.kinds).map(([name, kind]) => [name, kind.executor(runtime, services[name])]),
    );
  }
}

/**
 * The built-in kinds and the plugin kinds `kinds` (public-node-kind.ts), with every problem of the list, each
 * prefixed with `where` (e.g. "option nodeKinds"). No plugin kinds: the built-in registry.
 */
export function withPluginKinds(
  kinds: readonly unknown[],
  where: string,
): { registry: NodeKindRegistry; problems: string[] } {
  if (kinds.length === 0) return { registry: builtinNodeKinds(), problems: [] };
  const { table, problems } = pluginNodeKinds(kinds, nodeKindNames(), where);
  return { registry: new NodeKindRegistry(table), problems };
}

let builtin: NodeKindRegistry | undefined;

/** The built-in kinds only (the default wherever no host registry is given). */
export function builtinNodeKinds(): NodeKindRegistry {
  return (builtin ??= new NodeKindRegistry());
}

/** The built-in kind named `kind`, or undefined. */
export function nodeKindOf(kind: string): AnyEngineNodeKind | undefined {
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
