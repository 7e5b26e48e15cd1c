import { readdir, readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { validateWorkflowDefinition } from "../schemas/schema-validator.js";
import type { TaskHandler, TaskNode, WorkflowDefinition, WorkflowNode } from "./workflow-types.js";

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

  list(): WorkflowDefinition[] {
    return [...this.byId.values()];
  }

  ids(): string[] {
    return [...this.byId.keys()];
  }
}

const DEFINITION_EXTENSIONS = new Set([".yaml", ".yml", ".json"]);

/** Reads every definition file of a directory; a bad file is refused with its path and the reason. */
export async function readWorkflowDirectory(dir: string, handlers: Record<string, TaskHandler>): Promise<WorkflowDefinition[]> {
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
      workflows.push(checkWorkflow(value, handlers));
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
}): Promise<WorkflowCatalog> {
  const builtin = await readWorkflowDirectory(options.builtinDir, options.handlers);
  const extra = options.extraDir ? await readWorkflowDirectory(options.extraDir, options.handlers) : [];
  const seen = new Set<string>();
  for (const w of [...builtin, ...extra]) {
    if (seen.has(w.id)) throw new WorkflowLoadError(`workflow id "${w.id}" is defined twice`);
    seen.add(w.id);
  }
  return new WorkflowCatalog([...builtin, ...extra], options.defaultWorkflowId);
}

/** Schema validation (which also checks node ids and references), plus the handler names. */
export function checkWorkflow(value: unknown, handlers: Record<string, TaskHandler>): WorkflowDefinition {
  validateWorkflowDefinition(value);
  const workflow = value as WorkflowDefinition;
  for (const node of workflow.nodes as Array<WorkflowNode | { kind: string; id: string }>) {
    if (node.kind === "task" && !handlers[(node as TaskNode).handler]) {
      throw new WorkflowLoadError(`node "${node.id}": no handler named "${(node as TaskNode).handler}" is registered (known: ${Object.keys(handlers).join(", ")})`);
    }
    if (!["task", "approval", "clarification", "delay"].includes(node.kind)) {
      throw new WorkflowLoadError(`node "${node.id}": node kind "${node.kind}" is not supported by this host yet`);
    }
  }
  return workflow;
}
