import type { EnvReader } from "../domain/env-settings.js";

/** The built-in workflow sets this package ships: `workflows/demo/` and `workflows/conformance/` (the OpenWOP fixtures). */
export const BUILTIN_WORKFLOW_SETS = ["demo", "conformance"] as const;
export type BuiltinWorkflowSet = (typeof BUILTIN_WORKFLOW_SETS)[number];

export interface WorkflowSettings {
  /** WORKFLOWS_DIR: the user's own workflow definitions. */
  workflowsDir?: string;
  /**
   * BUILTIN_WORKFLOWS, when set (`none` is the empty list). Unset: `demo` when the user brings no workflows of
   * their own (no WORKFLOWS_DIR, none given programmatically), none when they do (see `builtinWorkflowSets`).
   */
  builtinWorkflows?: BuiltinWorkflowSet[];
  /**
   * DEFAULT_SKILL, when set: the skill a message without `metadata.skillId` runs (it must be loaded). Unset:
   * `echo` when it is loaded, else the first workflow loaded (the user's, in their order).
   */
  defaultSkill?: string;
}

/** WORKFLOWS_DIR, BUILTIN_WORKFLOWS and DEFAULT_SKILL. */
export function readWorkflowSettings(env: EnvReader): WorkflowSettings {
  const workflowsDir = env.raw("WORKFLOWS_DIR");
  const defaultSkill = env.raw("DEFAULT_SKILL")?.trim() || undefined;
  const builtinWorkflows = readBuiltinWorkflows(env);
  return {
    ...(workflowsDir !== undefined ? { workflowsDir } : {}),
    ...(builtinWorkflows !== undefined ? { builtinWorkflows } : {}),
    ...(defaultSkill !== undefined ? { defaultSkill } : {}),
  };
}

function readBuiltinWorkflows(env: EnvReader): BuiltinWorkflowSet[] | undefined {
  if (env.raw("BUILTIN_WORKFLOWS") === undefined) return undefined;
  const entries = env.list("BUILTIN_WORKFLOWS");
  const allowed = `a comma-separated list of ${BUILTIN_WORKFLOW_SETS.join(", ")}, or none`;
  if (entries.length === 0) {
    env.problem(`BUILTIN_WORKFLOWS must be ${allowed} (got "${env.raw("BUILTIN_WORKFLOWS")}")`);
    return undefined;
  }
  if (entries.includes("none")) {
    if (entries.length > 1)
      env.problem(`BUILTIN_WORKFLOWS=none cannot be combined with other sets (got "${entries.join(",")}")`);
    return [];
  }
  const sets: BuiltinWorkflowSet[] = [];
  for (const entry of entries) {
    if (!(BUILTIN_WORKFLOW_SETS as readonly string[]).includes(entry))
      env.problem(`BUILTIN_WORKFLOWS must be ${allowed} (got "${entry}")`);
    else if (!sets.includes(entry as BuiltinWorkflowSet)) sets.push(entry as BuiltinWorkflowSet);
  }
  return sets;
}

/** The built-in sets to load: BUILTIN_WORKFLOWS when set; else `demo` unless the user brings workflows of their own. */
export function builtinWorkflowSets(settings: WorkflowSettings, programmaticWorkflows: number): BuiltinWorkflowSet[] {
  if (settings.builtinWorkflows) return settings.builtinWorkflows;
  return settings.workflowsDir !== undefined || programmaticWorkflows > 0 ? [] : ["demo"];
}
