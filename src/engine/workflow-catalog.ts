import { readdir, readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { DomainError } from "../domain/errors.js";
import { validateWorkflowDefinition } from "../schemas/schema-validator.js";
import { nodeProblem, statelessNodeKinds } from "./nodes/node-registry.js";
import type { TaskHandler, TaskNode, WorkflowDefinition, WorkflowNode } from "../workflows/workflow-types.js";
import type { BuiltinWorkflowSet } from "../workflows/workflow-settings.js";
import { unexpandedVariables, VARIABLE_REFERENCE } from "../workflows/workflow-variables.js";

/**
 * Configuration values a definition may reference as `${NAME}` in an `a2a.invoke` node's `agentCardUrl`
 * (only the names listed here; the value `undefined` means "known but not configured").
 */
export type WorkflowVariables = Readonly<Record<string, string | undefined>>;

/** The variables every definition may reference, configured or not. */
export const WORKFLOW_VARIABLE_NAMES: readonly string[] = ["A2A_PEER_CARD_URL"];

const VARIABLE = VARIABLE_REFERENCE;
export { unexpandedVariables };

/** Each loaded definition's form before its variables were expanded (checkWorkflow), where they differ. */
const AS_WRITTEN = new WeakMap<WorkflowDefinition, WorkflowDefinition>();

export class WorkflowLoadError extends Error {
  override readonly name = "WorkflowLoadError";
}

/** All workflows this host serves; each one becomes an AgentSkill on the agent card. */
export class WorkflowCatalog {
  private readonly byId: Map<string, WorkflowDefinition>;

  constructor(workflows: WorkflowDefinition[], readonly defaultWorkflowId: string) {
    this.byId = new Map(workflows.map((w) => [w.id, w]));
    if (!this.byId.has(defaultWorkflowId)) {
      throw new WorkflowLoadError(`the default skill "${defaultWorkflowId}" is not a loaded workflow (loaded: ${this.ids().join(", ")})`);
    }
  }

  get(id: string): WorkflowDefinition | undefined {
    return this.byId.get(id);
  }

  /** The workflow a task runs; one that is no longer loaded is an internal error naming the task. */
  ofTask(task: { taskId: string; workflowId: string }): WorkflowDefinition {
    const workflow = this.byId.get(task.workflowId);
    if (!workflow) throw new DomainError("internal", `workflow ${task.workflowId} of task ${task.taskId} is no longer loaded`);
    return workflow;
  }

  list(): WorkflowDefinition[] {
    return [...this.byId.values()];
  }

  /**
   * The definition as its author wrote it, for answers (GET /v1/workflows/{id}): `${NAME}` references stay
   * references, since their configured values (WORKFLOW_VARIABLES, A2A_PEER_CARD_URL) may hold secrets.
   */
  asWritten(id: string): WorkflowDefinition | undefined {
    const workflow = this.byId.get(id);
    return workflow && (AS_WRITTEN.get(workflow) ?? workflow);
  }

  ids(): string[] {
    return [...this.byId.keys()];
  }
}

const DEFINITION_EXTENSIONS = new Set([".yaml", ".yml", ".json"]);

/** A checked definition and where it came from (a file path, or `workflows[i]` for one given as an object). */
interface LoadedWorkflow {
  workflow: WorkflowDefinition;
  source: string;
}

/** Reads every definition file of a directory; a bad file is refused with its path and the reason. */
export async function readWorkflowDirectory(dir: string, handlers: Record<string, TaskHandler>, variables: WorkflowVariables = {}): Promise<WorkflowDefinition[]> {
  return (await readDirectory(dir, handlers, variables)).map((l) => l.workflow);
}

/** The named peers a definition's `a2a.invoke` nodes may call (name → card URL or url, shown as the node's agentCardUrl), and where to list unknown ones. */
export interface PeerNames {
  peers: Readonly<Record<string, string>>;
  /** Collects each node naming an unknown peer (the caller lists them all at once) instead of refusing at the first. */
  onUnknownPeer?: (problem: string) => void;
}

/** With `missingHandlers`, a task node naming an unknown handler is collected there instead of refusing the file. */
async function readDirectory(dir: string, handlers: Record<string, TaskHandler>, variables: WorkflowVariables, missingHandlers?: string[], peers?: PeerNames): Promise<LoadedWorkflow[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => DEFINITION_EXTENSIONS.has(extname(n))).sort();
  } catch (err) {
    throw new WorkflowLoadError(`cannot read the workflow directory ${dir}: ${(err as Error).message}`);
  }
  const workflows: LoadedWorkflow[] = [];
  for (const name of names) {
    const path = join(dir, name);
    try {
      const text = await readFile(path, "utf8");
      const value: unknown = extname(name) === ".json" ? JSON.parse(text) : parseYaml(text);
      workflows.push({ workflow: checkWorkflow(value, handlers, variables, missingHandlers && ((m) => missingHandlers.push(`${path}: ${m}`)), peers && sourced(peers, path)), source: path });
    } catch (err) {
      throw new WorkflowLoadError(`${path}: ${(err as Error).message}`);
    }
  }
  return workflows;
}

/** Definitions given as objects, checked exactly like files; each is copied, so later changes to it do not leak in. */
function checkGivenWorkflows(given: readonly unknown[], handlers: Record<string, TaskHandler>, variables: WorkflowVariables, missingHandlers: string[], peers: PeerNames): LoadedWorkflow[] {
  return given.map((value, i) => {
    const source = `workflows[${i}]`;
    try {
      let copy: unknown;
      try {
        copy = structuredClone(value);
      } catch {
        throw new WorkflowLoadError("a workflow definition must be plain JSON data (objects, arrays, strings, numbers, booleans, null)");
      }
      return { workflow: checkWorkflow(copy, handlers, variables, (m) => missingHandlers.push(`${source}: ${m}`), sourced(peers, source)), source };
    } catch (err) {
      throw new WorkflowLoadError(`${source}: ${(err as Error).message}`);
    }
  });
}

export interface WorkflowCatalogOptions {
  /** The folder holding one subfolder per built-in set (`demo/`, `conformance/`). */
  builtinDir: string;
  /** The built-in sets to load (BUILTIN_WORKFLOWS, resolved): none means only the user's workflows. */
  builtin: readonly BuiltinWorkflowSet[];
  /** WORKFLOWS_DIR: the user's definition files. */
  extraDir?: string;
  /** Definitions given as objects (`startHost({ workflows })`), validated like files; loaded after WORKFLOWS_DIR. */
  workflows?: readonly WorkflowDefinition[];
  handlers: Record<string, TaskHandler>;
  /** DEFAULT_SKILL when set (it must be loaded); else `echo` when loaded, else the user's first workflow, else the first built-in. */
  defaultWorkflowId?: string;
  variables?: WorkflowVariables;
  /** The named peers (A2A_PEERS): name → card URL (or url). A node naming any other peer stops the start. */
  peers?: Readonly<Record<string, string>>;
}

/** `peers`, with each unknown-peer problem prefixed by where the definition came from. */
function sourced(peers: PeerNames, source: string): PeerNames {
  const collect = peers.onUnknownPeer;
  return { peers: peers.peers, ...(collect ? { onUnknownPeer: (m: string) => collect(`${source}: ${m}`) } : {}) };
}

/**
 * The built-in sets asked for, then the user's workflows (WORKFLOWS_DIR, then those given as objects). Every
 * task node naming a handler nothing provides is listed in one error; a workflow id defined twice, or no
 * workflow at all, stops the start too.
 */
export async function loadWorkflowCatalog(options: WorkflowCatalogOptions): Promise<WorkflowCatalog> {
  const variables = options.variables ?? {};
  const missingHandlers: string[] = [];
  const unknownPeers: string[] = [];
  const peers: PeerNames = { peers: options.peers ?? {}, onUnknownPeer: (m) => unknownPeers.push(m) };
  const builtin: LoadedWorkflow[] = [];
  for (const set of options.builtin) builtin.push(...(await readDirectory(join(options.builtinDir, set), options.handlers, variables, missingHandlers, peers)));
  // One order for the built-ins whatever the sets: by id, as when they shared one folder.
  builtin.sort((a, b) => (a.workflow.id < b.workflow.id ? -1 : a.workflow.id > b.workflow.id ? 1 : 0));
  const user = [
    ...(options.extraDir ? await readDirectory(options.extraDir, options.handlers, variables, missingHandlers, peers) : []),
    ...checkGivenWorkflows(options.workflows ?? [], options.handlers, variables, missingHandlers, peers),
  ];
  if (missingHandlers.length > 0) {
    const known = Object.keys(options.handlers).sort().join(", ");
    throw new WorkflowLoadError(
      `${missingHandlers.length === 1 ? "a task node names a handler" : `${missingHandlers.length} task nodes name handlers`} that nothing provides (register them as handlers; known: ${known}):\n${missingHandlers.map((m) => `- ${m}`).join("\n")}`,
    );
  }
  if (unknownPeers.length > 0) {
    const configured = Object.keys(peers.peers).sort().join(", ") || "none";
    throw new WorkflowLoadError(
      `${unknownPeers.length === 1 ? "an a2a.invoke node names a peer that is" : `${unknownPeers.length} a2a.invoke nodes name peers that are`} not configured (configure peers in A2A_PEERS, A2A_PEERS_FILE or startHost's peers; configured: ${configured}):\n${unknownPeers.map((m) => `- ${m}`).join("\n")}`,
    );
  }
  const bySource = new Map<string, string>();
  for (const { workflow, source } of [...builtin, ...user]) {
    const first = bySource.get(workflow.id);
    if (first !== undefined) throw new WorkflowLoadError(`workflow id "${workflow.id}" is defined twice: in ${first} and in ${source}`);
    bySource.set(workflow.id, source);
  }
  const all = [...builtin, ...user].map((l) => l.workflow);
  if (all.length === 0) {
    throw new WorkflowLoadError(
      "no workflows are loaded: give your own (WORKFLOWS_DIR, or workflow definitions to startHost) or turn on a built-in set (BUILTIN_WORKFLOWS=demo)",
    );
  }
  const defaultWorkflowId = options.defaultWorkflowId ?? (bySource.has("echo") ? "echo" : (user[0] ?? builtin[0])!.workflow.id);
  return new WorkflowCatalog(all, defaultWorkflowId);
}

/**
 * Schema validation (which also checks node ids and references), plus the handler names. `${NAME}` in an
 * `a2a.invoke` node's agentCardUrl is expanded from `variables` first; a name that is not a known variable
 * is refused, and one that is known but not configured stays in place (the node then fails when it runs,
 * with a message naming the variable), so the definition still loads.
 */
export function checkWorkflow(
  value: unknown,
  handlers: Record<string, TaskHandler>,
  variables: WorkflowVariables = {},
  /** Collects each missing handler (the caller lists them all at once) instead of refusing at the first. */
  onMissingHandler?: (problem: string) => void,
  /** The named peers `peer:` may name; none by default. */
  peers: PeerNames = { peers: {} },
): WorkflowDefinition {
  const { expanded, forValidation } = expandVariables(value, variables, peers.peers);
  validateWorkflowDefinition(forValidation);
  const workflow = expanded as WorkflowDefinition;
  if (expanded !== value) AS_WRITTEN.set(workflow, value as WorkflowDefinition);
  for (const node of workflow.nodes as Array<WorkflowNode | { kind: string; id: string }>) {
    if (node.kind === "task" && !Object.hasOwn(handlers, (node as TaskNode).handler)) {
      if (!onMissingHandler) throw new WorkflowLoadError(`node "${node.id}": no handler named "${(node as TaskNode).handler}" is registered (known: ${Object.keys(handlers).join(", ")})`);
      onMissingHandler(`workflow "${workflow.id}", node "${node.id}": no handler named "${(node as TaskNode).handler}"`);
    }
    // The kind's own load-time checks (node-registry.ts); an unknown kind is refused there.
    const problem = nodeProblem(node, {
      handlers,
      variables: { ...Object.fromEntries(WORKFLOW_VARIABLE_NAMES.map((n) => [n, undefined])), ...variables },
      peers: Object.keys(peers.peers),
      ...(peers.onUnknownPeer ? { onUnknownPeer: (m: string) => peers.onUnknownPeer!(`workflow "${workflow.id}", ${m}`) } : {}),
    });
    if (problem) throw new WorkflowLoadError(problem);
    // A stateless skill answers at once and stores nothing, so it cannot pause, wait or call out.
    if (workflow.stateless && !statelessNodeKinds().includes(node.kind)) {
      throw new WorkflowLoadError(`node "${node.id}": a stateless workflow may only hold ${statelessNodeKinds().join(" and ")} nodes (found "${node.kind}")`);
    }
  }
  return workflow;
}

/** A stand-in that passes `format: uri` while a reference stays unexpanded; only the schema check sees it. */
const UNSET_STAND_IN = "https://unset-variable.invalid/";

function expandVariables(value: unknown, variables: WorkflowVariables, peers: Readonly<Record<string, string>>): { expanded: unknown; forValidation: unknown } {
  const nodes = (value as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) return { expanded: value, forValidation: value };
  const expandedNodes: unknown[] = [];
  const validationNodes: unknown[] = [];
  for (const node of nodes) {
    const candidate = node as { kind?: unknown; id?: unknown; agentCardUrl?: unknown; peer?: unknown } | null;
    const url = candidate?.agentCardUrl;
    // A named peer's node shows the peer's card URL (or url) as its agentCardUrl; the schema sees it as written.
    if (candidate?.kind === "a2a.invoke" && url === undefined && typeof candidate.peer === "string" && Object.hasOwn(peers, candidate.peer)) {
      expandedNodes.push({ ...node, agentCardUrl: peers[candidate.peer] });
      validationNodes.push(node);
      continue;
    }
    if (candidate?.kind !== "a2a.invoke" || typeof url !== "string" || unexpandedVariables(url).length === 0) {
      expandedNodes.push(node);
      validationNodes.push(node);
      continue;
    }
    const id = String(candidate.id);
    for (const name of unexpandedVariables(url)) {
      if (!WORKFLOW_VARIABLE_NAMES.includes(name) && !Object.hasOwn(variables, name)) {
        const known = [...new Set([...WORKFLOW_VARIABLE_NAMES, ...Object.keys(variables)])];
        throw new WorkflowLoadError(`node "${id}": agentCardUrl refers to \${${name}}, which is not a variable workflows may use (known: ${known.join(", ")})`);
      }
    }
    const result = url.replace(VARIABLE, (whole, name: string) => variables[name] ?? whole);
    expandedNodes.push({ ...node, agentCardUrl: result });
    validationNodes.push({ ...node, agentCardUrl: unexpandedVariables(result).length ? UNSET_STAND_IN : result });
  }
  return { expanded: { ...(value as object), nodes: expandedNodes }, forValidation: { ...(value as object), nodes: validationNodes } };
}
