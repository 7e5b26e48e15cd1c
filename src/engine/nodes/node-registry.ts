import type { A2AInvokeRunner } from "../a2a-invoke-runner.js";
import type { TaskHandler } from "../workflow-types.js";
import { a2aInvokeNodeExecutor } from "./a2a-invoke-node.js";
import { delayNodeExecutor } from "./delay-node.js";
import { gateNodeExecutor } from "./gate-node.js";
import { switchNodeExecutor } from "./switch-node.js";
import type { NodeExecutors, NodeRuntime } from "./node-executor.js";
import { taskNodeExecutor } from "./task-node.js";

/** The executor of every node kind. A new kind: its node type in workflow-types.ts, one executor file, one line here. */
export function nodeExecutors(runtime: NodeRuntime, deps: { handlers: Record<string, TaskHandler>; peerInvoker: A2AInvokeRunner }): NodeExecutors {
  return {
    task: taskNodeExecutor(runtime, deps.handlers),
    delay: delayNodeExecutor(runtime),
    approval: gateNodeExecutor(runtime),
    clarification: gateNodeExecutor(runtime),
    "a2a.invoke": a2aInvokeNodeExecutor(runtime, deps.peerInvoker),
    switch: switchNodeExecutor(runtime),
  };
}
