import { giveUpReason } from "../../domain/retry-policy.js";
import type { TaskContext } from "../../machine/task-context.js";
import { ShutdownSignal } from "../in-flight-work.js";
import { withConversation, type HandlerContextBase } from "../handler-conversation.js";
import { callerFailure, type CallerFailure } from "../handler-failure.js";
import { didYouMean } from "../../domain/closest-name.js";
import { idempotencyKeyOf, incomingMessageOf, nodeAfter, runInputOf } from "../workflow-walk.js";
import { feedbackFor } from "./gates/approval-node.js";
import {
  HandlerError,
  type HandlerResult,
  type TaskHandler,
  type TaskNode,
  type WorkflowDefinition,
} from "../../workflows/workflow-types.js";
import { chunkEmitter } from "./artifact-chunks.js";
import {
  failureMessage,
  localEffect,
  stageNodeCompleted,
  stillRunning,
  type NodeExecutor,
  type NodeOutcome,
  type NodeRuntime,
} from "./node-executor.js";
import type { NodeCheckContext, EngineNodeKind, StatelessRun } from "./node-kind.js";

/** The kind, for the registry: its handler must be registered (checked even when the schema fails), stateless use allowed. */
export const taskNodeKind: EngineNodeKind<TaskNode, Readonly<Record<string, TaskHandler>>> = {
  stateless: { run: runStatelessTask },
  precheck: taskHandlerProblem,
  createServices: (deps) => ({ services: deps.handlers }),
  executor: (runtime, handlers) => taskNodeExecutor(runtime, handlers),
};

/** A stateless skill's task node: its handler runs at once; nothing is stored. */
async function runStatelessTask(
  node: TaskNode,
  run: StatelessRun,
): Promise<{ next: string | null; result: HandlerResult } | { failure: CallerFailure }> {
  const handler = run.handlers[node.handler];
  try {
    if (!handler) throw new HandlerError("handler_missing", `no handler named "${node.handler}" is registered`);
    const base: HandlerContextBase = {
      taskId: run.runId,
      runId: run.runId,
      nodeId: node.id,
      idempotencyKey: `${run.runId}:${node.id}`,
      attempt: 1,
      params: node.params ?? {},
      input: run.input,
      outputs: run.outputs,
      feedback: [],
      signal: run.signal,
      emitArtifactChunk: run.emitArtifactChunk,
    };
    const result = await handler(
      withConversation(base, run.reads, { tenant: run.tenant, contextId: run.contextId, message: run.message }),
    );
    return { next: nodeAfter(run.workflow, node.id), result };
  } catch (err) {
    return {
      failure: callerFailure(
        err,
        run.logger,
        { skillId: run.workflow.id, nodeId: node.id },
        `handler "${node.handler}"`,
      ),
    };
  }
}

/** A handler name no handler is registered under, with the likely typo and the known names. */
function taskHandlerProblem(node: Readonly<Record<string, unknown>>, context: NodeCheckContext): string | undefined {
  const handler = node["handler"];
  if (typeof handler !== "string" || Object.hasOwn(context.handlers, handler)) return undefined;
  const known = Object.keys(context.handlers).sort();
  return `node "${String(node["id"])}": no handler named "${handler}"${didYouMean(handler, known)} (register it as a handler: startHost's handlers or HANDLERS_MODULE; known: ${known.join(", ") || "none"})`;
}

/**
 * `task` nodes: stage node.started, run the named handler outside the lock, then stage its result. A
 * handler not marked `pure` may act outside this host, so what came before its node.started is written
 * first and node.started is a write of its own; a pure handler's node.started rides with the transitions
 * before it (created, started, or the previous node's completion), and its run is a local effect: a new
 * task whose creator waits may run it before its first write, so a fast task is stored once, at its end.
 */
export function taskNodeExecutor(
  runtime: NodeRuntime,
  handlers: Readonly<Record<string, TaskHandler>>,
): NodeExecutor<TaskNode> {
  return {
    async step({ taskId, node, live, workflow, at }) {
      const { repository } = runtime;
      const pure = handlers[node.handler]?.pure === true;
      if (!pure) await repository.flush(taskId);
      const context = repository.stage(live, { type: "NODE_STARTED", at, nodeId: node.id }).context;
      const run = () =>
        runHandler(runtime, handlers, { taskId, node, context, workflow, createdAt: live.record.createdAt });
      return pure ? localEffect(run) : run;
    },
  };
}

async function runHandler(
  runtime: NodeRuntime,
  handlers: Readonly<Record<string, TaskHandler>>,
  args: { taskId: string; node: TaskNode; context: TaskContext; workflow: WorkflowDefinition; createdAt: string },
): Promise<NodeOutcome | void> {
  const { taskId, node, context, workflow, createdAt } = args;
  const { repository, logger } = runtime;
  const handler = handlers[node.handler];
  const ran = await runtime.inFlight.run(taskId, (abort): Promise<HandlerResult> => {
    if (!handler) throw new HandlerError("handler_missing", `no handler named "${node.handler}" is registered`);
    const base: HandlerContextBase = {
      taskId,
      runId: taskId,
      nodeId: node.id,
      idempotencyKey: idempotencyKeyOf(context, node.id),
      attempt: context.attempt,
      params: node.params ?? {},
      input: runInputOf(context),
      outputs: context.outputs,
      feedback: feedbackFor(context, workflow, node.id),
      // Made when the handler reads it: most handlers never do.
      get signal() {
        return abort.signal;
      },
      emitArtifactChunk: chunkEmitter(runtime, taskId, node.id),
    };
    return handler(
      withConversation(base, repository, {
        tenant: context.tenant,
        contextId: context.contextId,
        message: incomingMessageOf(context) ?? context.request,
        self: { taskId, createdAt },
      }),
    );
  });
  if (ran.abort.aborted) {
    if (ran.abort.reason instanceof ShutdownSignal) throw ran.abort.reason;
    return; // cancelled: the driver's next step commits CANCELLED
  }
  let failure: CallerFailure | undefined;
  if ("error" in ran) {
    failure = callerFailure(ran.error, logger, { taskId, nodeId: node.id }, `handler "${node.handler}"`);
  }
  return (live) => {
    const at = runtime.now();
    if (!stillRunning(live, node.id)) return; // cancelled or paused (immediate) while the handler ran; its result is dropped
    if (failure) {
      // Handler retries are immediate (the next step starts the node again); the handler's error says whether to.
      // Executions that died with their instance are poison work's budget (RECOVERY_MAX_ATTEMPTS), not this one:
      // the charged ones (`crashes`) and the one uncharged death that made the node a suspect.
      if (
        !giveUpReason(
          { baseMs: 0, maxMs: 0, maxAttempts: node.retry?.maxAttempts ?? 1 },
          failure,
          context.attempt - (context.crashes ?? 0) - (context.suspect ? 1 : 0),
        )
      )
        return;
      const error = { code: failure.code, message: failure.message, nodeId: node.id };
      repository.stage(live, { type: "FAIL", at, error, statusMessage: failureMessage(live.record, error.code) });
      return;
    }
    stageNodeCompleted(repository, live, workflow, node.id, at, ran.value);
  };
}
