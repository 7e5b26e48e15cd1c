import type { Message } from "../domain/a2a-types.js";
import type { TaskContext } from "./task-context.js";

/** What a new task's machine is created from. */
export interface TaskMachineInput {
  taskId: string;
  contextId: string;
  workflowId: string;
  /** The definition version the run walks (absent: the deployed one, as runs created before versions did). */
  workflowVersion?: string;
  tenant: string;
  firstNode: string | null;
  message: Message;
}

/** A new task's context: what the machine starts from in `pending`. */
export function initialContext(input: TaskMachineInput): TaskContext {
  return {
    taskId: input.taskId,
    contextId: input.contextId,
    workflowId: input.workflowId,
    ...(input.workflowVersion !== undefined ? { workflowVersion: input.workflowVersion } : {}),
    tenant: input.tenant,
    cursor: input.firstNode,
    nodeStarted: false,
    attempt: 0,
    visits: {},
    outputs: {},
    artifacts: [],
    artifactsByNode: {},
    request: input.message,
    historyCount: 1,
    history: [input.message],
  };
}
