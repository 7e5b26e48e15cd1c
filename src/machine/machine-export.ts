import { taskMachine, type TaskMachineInput } from "./task-machine.js";

/** Stands in for the task's first message: the initial context is built from input the export cannot know. */
const PLACEHOLDER_INPUT: TaskMachineInput = {
  taskId: "(from input)",
  contextId: "(from input)",
  workflowId: "(from input)",
  tenant: "(from input)",
  firstNode: "(first node)",
  message: { messageId: "(first message)", role: "user", parts: [{ kind: "text", text: "(first message)" }] },
};

/**
 * The task machine as XState JSON config, which the Stately visualizer (stately.ai/viz, Studio "import
 * from JSON") reads. Guards and actions are named references, so the export is the whole definition. The
 * context is the machine's own initial context for a placeholder input, complete, so the export runs as is
 * once guards and actions are provided.
 */
export function exportTaskMachine(): Record<string, unknown> {
  const { context: initialContext, ...config } = taskMachine.config as Record<string, unknown>;
  const context =
    typeof initialContext === "function"
      ? (initialContext as (args: { input: TaskMachineInput }) => unknown)({ input: PLACEHOLDER_INPUT })
      : initialContext;
  return JSON.parse(JSON.stringify({ ...config, context })) as Record<string, unknown>;
}
