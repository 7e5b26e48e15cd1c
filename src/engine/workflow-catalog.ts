import { readdir, readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { DomainError } from "../domain/errors.js";
import { validateWorkflowDefinition } from "../schemas/schema-validator.js";
import type { TaskHandler, TaskNode, WorkflowDefinition, WorkflowNode } from "./workflow-types.js";

/**
 * Configuration values a definition may reference as `${NAME}` in an `a2a.invoke` node's `agentCardUrl`
 * (only the names listed here; the value `undefined` means "known but not configured").
 */
export type WorkflowVariables = Readonly<Record<string, string | undefined>>;

/** The variables every definition may reference, configured or not. */
export const WORKFLOW_VARIABLE_NAMES: readonly string[] = ["A2A_PEER_CARD_URL"];

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** The `${NAME}` references left in a string (after loading: the ones that were not configured). */
export function unexpandedVariables(text: string): string[] {
  return [...text.matchAll(VARIABLE)].map((m) => m[1]!);
}

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

  ids(): string[] {
    return [...this.byId.keys()];
  }
}

const DEFINITION_EXTENSIONS = new Set([".yaml", ".yml", ".json"]);

/** Reads every definition file of a directory; a bad file is refused with its path and the reason. */
export async function readWorkflowDirectory(dir: string, handlers: Record<string, TaskHandler>, variables: WorkflowVariables = {}): Promise<WorkflowDefinition[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => DEFINITION_EXTENSIONS.has(extname(n))).sort();
  } catch (err) {
    throw new WorkflowLoadError(`cannot read the workflow directory ${dir}: ${(err as Error).message}`);
  }
  const workflows: WorkflowDefinition[] = [];
  for (const name of names) {
    const path = join(dir, name);
    try {
      const text = await readFile(path, "utf8");
      const value: unknown = extname(name) === ".json" ? JSON.parse(text) : parseYaml(text);
      workflows.push(checkWorkflow(value, handlers, variables));
    } catch (err) {
      throw new WorkflowLoadError(`${path}: ${(err as Error).message}`);
    }
  }
  return workflows;
}

export async function loadWorkflowCatalog(options: {
  builtinDir: string;
  extraDir?: string;
  handlers: Record<string, TaskHandler>;
  defaultWorkflowId: string;
  variables?: WorkflowVariables;
}): Promise<WorkflowCatalog> {
  const builtin = await readWorkflowDirectory(options.builtinDir, options.handlers, options.variables);
  const extra = options.extraDir ? await readWorkflowDirectory(options.extraDir, options.handlers, options.variables) : [];
  const seen = new Set<string>();
  for (const w of [...builtin, ...extra]) {
    if (seen.has(w.id)) throw new WorkflowLoadError(`workflow id "${w.id}" is defined twice`);
    seen.add(w.id);
  }
  return new WorkflowCatalog([...builtin, ...extra], options.defaultWorkflowId);
}

/**
 * Schema validation (which also checks node ids and references), plus the handler names. `${NAME}` in an
 * `a2a.invoke` node's agentCardUrl is expanded from `variables` first; a name that is not a known variable
 * is refused, and one that is known but not configured stays in place (the node then fails when it runs,
 * with a message naming the variable), so the definition still loads.
 */
export function checkWorkflow(value: unknown, handlers: Record<string, TaskHandler>, variables: WorkflowVariables = {}): WorkflowDefinition {
  const { expanded, forValidation } = expandVariables(value, variables);
  validateWorkflowDefinition(forValidation);
  const workflow = expanded as WorkflowDefinition;
  for (const node of workflow.nodes as Array<WorkflowNode | { kind: string; id: string }>) {
    if (node.kind === "task" && !handlers[(node as TaskNode).handler]) {
      throw new WorkflowLoadError(`node "${node.id}": no handler named "${(node as TaskNode).handler}" is registered (known: ${Object.keys(handlers).join(", ")})`);
    }
    if (!["task", "approval", "clarification", "delay", "a2a.invoke", "switch"].includes(node.kind)) {
      throw new WorkflowLoadError(`node "${node.id}": node kind "${node.kind}" is not supported by this host yet`);
    }
    // A stateless skill answers at once and stores nothing, so it cannot pause, wait or call out.
    if (workflow.stateless && !["task", "switch"].includes(node.kind)) {
      throw new WorkflowLoadError(`node "${node.id}": a stateless workflow may only hold task and switch nodes (found "${node.kind}")`);
    }
  }
  return workflow;
}

/** A stand-in that passes `format: uri` while a reference stays unexpanded; only the schema check sees it. */
const UNSET_STAND_IN = "https://unset-variable.invalid/";

function expandVariables(value: unknown, variables: WorkflowVariables): { expanded: unknown; forValidation: unknown } {
  const nodes = (value as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) return { expanded: value, forValidation: value };
  const expandedNodes: unknown[] = [];
  const validationNodes: unknown[] = [];
  for (const node of nodes) {
    const candidate = node as { kind?: unknown; id?: unknown; agentCardUrl?: unknown } | null;
    const url = candidate?.agentCardUrl;
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
