import { readdir, readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { DomainError } from "../domain/errors.js";
import { formatSchemaIssue, SchemaValidationError, validateWorkflowDefinition } from "../schemas/schema-validator.js";
import { builtinNodeKinds, type NodeKindRegistry } from "./nodes/node-registry.js";
import type { NodeBase, TaskHandler, WorkflowDefinition, WorkflowNode } from "../workflows/workflow-types.js";
import type { BuiltinWorkflowSet } from "../workflows/workflow-settings.js";
import { unexpandedVariables } from "../workflows/workflow-variables.js";
import { WorkflowLoadError } from "./workflow-load-error.js";
import { emptyGateWarnings, outputConditionProblems } from "./workflow-flow-checks.js";
import { refusedUrlProblems, type LoadEgressPolicies } from "./workflow-egress-checks.js";

export { WorkflowLoadError };

/**
 * Configuration values a definition may reference as `${NAME}` in an `a2a.invoke` node's `agentCardUrl`
 * (only the names listed here; the value `undefined` means "known but not configured").
 */
export type WorkflowVariables = Readonly<Record<string, string | undefined>>;

/** The variables every definition may reference, configured or not. */
export const WORKFLOW_VARIABLE_NAMES: readonly string[] = ["A2A_PEER_CARD_URL"];

export { unexpandedVariables };

/** Each loaded definition's form before its variables were expanded (checkWorkflow), where they differ. */
const AS_WRITTEN = new WeakMap<WorkflowDefinition, WorkflowDefinition>();

/** All workflows this host serves; each one becomes an AgentSkill on the agent card. */
export class WorkflowCatalog {
  private readonly byId: Map<string, WorkflowDefinition>;

  constructor(
    workflows: WorkflowDefinition[],
    readonly defaultWorkflowId: string,
    /** The node kinds its workflows were checked against: the engine, the supervisor and the console ask them. */
    readonly kinds: NodeKindRegistry = builtinNodeKinds(),
    /** What loads but may not be meant (a gate that can show no artifact), each naming its file: logged at start and by `check`. */
    readonly warnings: readonly string[] = [],
  ) {
    this.byId = new Map(workflows.map((w) => [w.id, w]));
    if (!this.byId.has(defaultWorkflowId)) {
      throw new WorkflowLoadError(
        `the default skill "${defaultWorkflowId}" is not a loaded workflow (loaded: ${this.ids().join(", ")})`,
      );
    }
  }

  get(id: string): WorkflowDefinition | undefined {
    return this.byId.get(id);
  }

  /** The workflow a task runs; one that is no longer loaded is an internal error naming the task. */
  ofTask(task: { taskId: string; workflowId: string }): WorkflowDefinition {
    const workflow = this.byId.get(task.workflowId);
    if (!workflow)
      throw new DomainError("internal", `workflow ${task.workflowId} of task ${task.taskId} is no longer loaded`);
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
  warnings: string[];
}

/** What one definition is checked against: the handlers, the variables and the named peers it may use. */
interface CheckContext {
  handlers: Record<string, TaskHandler>;
  variables: WorkflowVariables;
  /** The named peers (A2A_PEERS): name → card URL (or url), shown as the node's agentCardUrl. */
  peers: Readonly<Record<string, string>>;
  kinds: NodeKindRegistry;
  /** The egress policies its URLs will meet; none: URLs are not checked against a policy. */
  egress?: LoadEgressPolicies;
}

/** Reads every definition file of a directory; bad files are refused with their paths and every problem. */
export async function readWorkflowDirectory(
  dir: string,
  handlers: Record<string, TaskHandler>,
  variables: WorkflowVariables = {},
): Promise<WorkflowDefinition[]> {
  const problems: string[] = [];
  const loaded = await readDirectory(dir, { handlers, variables, peers: {}, kinds: builtinNodeKinds() }, problems);
  if (problems.length > 0) throw new WorkflowLoadError(problems);
  return loaded.map((l) => l.workflow);
}

/** Each file's problems go to `problems` (prefixed by its path), so one run names every bad file. */
async function readDirectory(dir: string, context: CheckContext, problems: string[]): Promise<LoadedWorkflow[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => DEFINITION_EXTENSIONS.has(extname(n))).sort();
  } catch (err) {
    problems.push(`cannot read the workflow directory ${dir}: ${(err as Error).message}`);
    return [];
  }
  const workflows: LoadedWorkflow[] = [];
  for (const name of names) {
    const path = join(dir, name);
    let value: unknown;
    try {
      const text = await readFile(path, "utf8");
      value = extname(name) === ".json" ? JSON.parse(text) : parseYaml(text);
    } catch (err) {
      problems.push(`${path}: ${(err as Error).message}`);
      continue;
    }
    const checked = inspectWorkflow(value, context);
    problems.push(...checked.problems.map((p) => `${path}: ${p}`));
    if (checked.workflow)
      workflows.push({
        workflow: checked.workflow,
        source: path,
        warnings: checked.warnings.map((w) => `${path}: ${w}`),
      });
  }
  return workflows;
}

/** Definitions given as objects, checked exactly like files; each is copied, so later changes to it do not leak in. */
function checkGivenWorkflows(given: readonly unknown[], context: CheckContext, problems: string[]): LoadedWorkflow[] {
  const workflows: LoadedWorkflow[] = [];
  given.forEach((value, i) => {
    const source = `workflows[${i}]`;
    let copy: unknown;
    try {
      copy = structuredClone(value);
    } catch {
      problems.push(
        `${source}: a workflow definition must be plain JSON data (objects, arrays, strings, numbers, booleans, null)`,
      );
      return;
    }
    const checked = inspectWorkflow(copy, context);
    problems.push(...checked.problems.map((p) => `${source}: ${p}`));
    if (checked.workflow)
      workflows.push({ workflow: checked.workflow, source, warnings: checked.warnings.map((w) => `${source}: ${w}`) });
  });
  return workflows;
}

export interface WorkflowCatalogOptions {
  /** The folder holding one subfolder per built-in set (`demo/`, `conformance/`). */
  builtinDir: string;
  /** The built-in sets to load (BUILTIN_WORKFLOWS, resolved): none means only the user's workflows. */
  builtin: readonly BuiltinWorkflowSet[];
  /** WORKFLOWS_DIR: the user's definition files. */
  extraDir?: string;
  /** Definitions given as objects (`startHost({ workflows })`), validated like files; loaded after WORKFLOWS_DIR. */
  workflows?: readonly WorkflowDefinition<NodeBase>[];
  handlers: Record<string, TaskHandler>;
  /** DEFAULT_SKILL when set (it must be loaded); else `echo` when loaded, else the user's first workflow, else the first built-in. */
  defaultWorkflowId?: string;
  variables?: WorkflowVariables;
  /** The named peers (A2A_PEERS): name → card URL (or url). A node naming any other peer stops the start. */
  peers?: Readonly<Record<string, string>>;
  /** The node kinds definitions may use: the built-in ones unless given (createCore's `nodeKinds`). */
  kinds?: NodeKindRegistry;
  /** The egress policies (HTTP_NODE_*, A2A_PEER_*): a node URL one of them will refuse stops the start. */
  egress?: LoadEgressPolicies;
}

/**
 * The built-in sets asked for, then the user's workflows (WORKFLOWS_DIR, then those given as objects). Every
 * problem of every definition (schema, missing handlers, unknown peers, variables), a workflow id defined
 * twice, or no workflow at all: one WorkflowLoadError listing them all, so one run shows everything to fix.
 */
export async function loadWorkflowCatalog(options: WorkflowCatalogOptions): Promise<WorkflowCatalog> {
  const kinds = options.kinds ?? builtinNodeKinds();
  const context: CheckContext = {
    handlers: options.handlers,
    variables: options.variables ?? {},
    peers: options.peers ?? {},
    kinds,
    ...(options.egress ? { egress: options.egress } : {}),
  };
  const problems: string[] = [];
  const builtin: LoadedWorkflow[] = [];
  for (const set of options.builtin)
    builtin.push(...(await readDirectory(join(options.builtinDir, set), context, problems)));
  // One order for the built-ins whatever the sets: by id, as when they shared one folder.
  builtin.sort((a, b) => (a.workflow.id < b.workflow.id ? -1 : a.workflow.id > b.workflow.id ? 1 : 0));
  const user = [
    ...(options.extraDir ? await readDirectory(options.extraDir, context, problems) : []),
    ...checkGivenWorkflows(options.workflows ?? [], context, problems),
  ];
  const bySource = new Map<string, string>();
  for (const { workflow, source } of [...builtin, ...user]) {
    const first = bySource.get(workflow.id);
    if (first !== undefined)
      problems.push(`workflow id "${workflow.id}" is defined twice: in ${first} and in ${source}`);
    else bySource.set(workflow.id, source);
  }
  if (problems.length > 0) throw new WorkflowLoadError(problems);
  const all = [...builtin, ...user].map((l) => l.workflow);
  if (all.length === 0) {
    throw new WorkflowLoadError(
      "no workflows are loaded: give your own (WORKFLOWS_DIR, or workflow definitions to startHost) or turn on a built-in set (BUILTIN_WORKFLOWS=demo)",
    );
  }
  const defaultWorkflowId =
    options.defaultWorkflowId ?? (bySource.has("echo") ? "echo" : (user[0] ?? builtin[0])!.workflow.id);
  const warnings = [...builtin, ...user].flatMap((l) => l.warnings);
  return new WorkflowCatalog(all, defaultWorkflowId, kinds, warnings);
}

/**
 * Schema validation (which also checks node ids and references), plus the handler names and each node kind's
 * own checks. `${NAME}` in an `a2a.invoke` node's agentCardUrl is expanded from `variables` first; a name that is
 * not a known variable is refused, and one that is known but not configured stays in place (the node then fails
 * when it runs, with a message naming the variable), so the definition still loads. Throws a WorkflowLoadError
 * listing every problem.
 */
export function checkWorkflow(
  value: unknown,
  handlers: Record<string, TaskHandler>,
  variables: WorkflowVariables = {},
  /** The named peers `peer:` may name (name → card URL or url); none by default. */
  peers: Readonly<Record<string, string>> = {},
  kinds: NodeKindRegistry = builtinNodeKinds(),
): WorkflowDefinition {
  const { workflow, problems } = inspectWorkflow(value, { handlers, variables, peers, kinds });
  if (!workflow || problems.length > 0) throw new WorkflowLoadError(problems);
  return workflow;
}

/**
 * Every problem of one definition, and its warnings. A schema error hides nothing else: the handler names are
 * checked whatever the schema says, and the kinds' own checks run on every node the schema found nothing wrong
 * with (a bad `artifactFrom` on a gate still shows an unknown `${NAME}` in an `http` node's url). The checks that
 * follow the paths (output conditions, empty gates) and the egress policy need the whole definition valid.
 */
function inspectWorkflow(
  value: unknown,
  context: CheckContext,
): { workflow?: WorkflowDefinition; problems: string[]; warnings: string[] } {
  const id = (value as { id?: unknown } | null)?.id;
  const where = typeof id === "string" ? `workflow "${id}", ` : "";
  const problems: string[] = [];
  const checkContext = {
    handlers: context.handlers,
    variables: { ...Object.fromEntries(WORKFLOW_VARIABLE_NAMES.map((n) => [n, undefined])), ...context.variables },
    peers: Object.keys(context.peers),
  };
  const { expanded, forValidation } = expandNodes(value, context, problems);
  problems.forEach((p, i) => (problems[i] = `${where}${p}`));
  let valid = true;
  /** Nodes (by index) the schema has something to say about. */
  const badNodes = new Set<number>();
  try {
    validateWorkflowDefinition(forValidation, context.kinds.extraSchemas());
  } catch (err) {
    if (!(err instanceof SchemaValidationError)) throw err;
    valid = false;
    problems.push(...err.issues.map((issue) => `invalid workflow definition: ${formatSchemaIssue(issue)}`));
    for (const issue of err.issues) {
      const index = /^nodes\/(\d+)(\/|$)/.exec(issue.path)?.[1];
      // An issue about `nodes` as a whole (or the root) leaves no node to trust.
      if (index === undefined && issue.path === "nodes") badNodes.add(-1);
      else if (index !== undefined) badNodes.add(Number(index));
    }
  }
  const nodes = (expanded as { nodes?: unknown } | null)?.nodes;
  for (const node of Array.isArray(nodes) ? (nodes as Array<Record<string, unknown> | null>) : []) {
    const problem =
      node && typeof node["kind"] === "string"
        ? context.kinds.of(node["kind"])?.precheck?.(node, checkContext)
        : undefined;
    if (problem) problems.push(`${where}${problem}`);
  }
  if (!valid) {
    if (!badNodes.has(-1) && Array.isArray(nodes))
      (nodes as Array<{ kind: string; id: string }>).forEach((node, index) => {
        if (badNodes.has(index)) return;
        const problem = context.kinds.problem(node, checkContext);
        if (problem) problems.push(`${where}${problem}`);
      });
    return { problems, warnings: [] };
  }
  const workflow = expanded as WorkflowDefinition;
  if (expanded !== value) AS_WRITTEN.set(workflow, value as WorkflowDefinition);
  for (const node of workflow.nodes as Array<WorkflowNode | { kind: string; id: string }>) {
    // The kind's own load-time checks (node-registry.ts); an unknown kind is refused there.
    const problem = context.kinds.problem(node, checkContext);
    if (problem) problems.push(`${where}${problem}`);
    // A stateless skill answers at once and stores nothing, so it cannot pause, wait or call out.
    const stateless = context.kinds.statelessNames();
    if (workflow.stateless && !stateless.includes(node.kind)) {
      problems.push(
        `${where}node "${node.id}": a stateless workflow may only hold ${stateless.join(" and ")} nodes (found "${node.kind}")`,
      );
    }
  }
  problems.push(...outputConditionProblems(workflow, context.kinds).map((p) => `${where}${p}`));
  if (context.egress)
    problems.push(...refusedUrlProblems(workflow, context.egress, checkContext.variables).map((p) => `${where}${p}`));
  const warnings = emptyGateWarnings(workflow, context.kinds).map((w) => `${where}${w}`);
  return problems.length > 0 ? { problems, warnings } : { workflow, problems, warnings };
}

/** Each node as its kind expands it (`${NAME}` references, named peers), and the form the schema sees. */
function expandNodes(
  value: unknown,
  context: CheckContext,
  problems: string[],
): { expanded: unknown; forValidation: unknown } {
  const nodes = (value as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) return { expanded: value, forValidation: value };
  const expandContext = { variables: context.variables, known: WORKFLOW_VARIABLE_NAMES, peers: context.peers };
  const expandedNodes: unknown[] = [];
  const validationNodes: unknown[] = [];
  let changed = false;
  for (const node of nodes) {
    const candidate = node as Record<string, unknown> | null;
    const kind = candidate && typeof candidate["kind"] === "string" ? context.kinds.of(candidate["kind"]) : undefined;
    const result = candidate && kind?.expand?.(candidate, expandContext, problems);
    changed ||= result !== undefined;
    expandedNodes.push(result ? result.node : node);
    validationNodes.push(result ? result.forValidation : node);
  }
  if (!changed) return { expanded: value, forValidation: value };
  return {
    expanded: { ...(value as object), nodes: expandedNodes },
    forValidation: { ...(value as object), nodes: validationNodes },
  };
}
