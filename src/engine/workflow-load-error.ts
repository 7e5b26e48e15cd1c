// Its own module, so the CLI can tell a workflow problem from a failed start without loading the engine.

/** Workflow definitions that cannot be served: every problem found, one per line (each names its file or `workflows[i]`). */
export class WorkflowLoadError extends Error {
  override readonly name = "WorkflowLoadError";
  readonly problems: readonly string[];

  constructor(problems: string | readonly string[]) {
    const list = typeof problems === "string" ? [problems] : [...problems];
    super(list.length === 1 ? list[0]! : `${list.length} workflow problems:\n${list.map((p) => `- ${p}`).join("\n")}`);
    this.problems = list;
  }
}
