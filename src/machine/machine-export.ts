import { taskMachine } from "./task-machine.js";

/**
 * The task machine as XState JSON config, which the Stately visualizer (stately.ai/viz, Studio "import
 * from JSON") reads. Guards and actions are named references, so the export is the whole definition.
 */
export function exportTaskMachine(): Record<string, unknown> {
  const { context: _context, ...config } = taskMachine.config as Record<string, unknown>;
  return {
    ...JSON.parse(JSON.stringify(config)),
    // The initial context is built from the task's first message; described here for readers.
    context: { taskId: "(from input)", contextId: "(from input)", workflowId: "(from input)", cursor: "(first node)", history: ["(first message)"] },
  };
}
