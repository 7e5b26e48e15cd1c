import { randomUUID } from "node:crypto";
import type { TaskContext } from "../../machine/task-context.js";
import { buildPeerInterrupt, CROSS_PROTOCOL_CANCEL, peerTaskToCancel } from "../a2a-invoke.js";
import type { A2AInvokeRunner, InvokeOutcome } from "../a2a-invoke-runner.js";
import { ShutdownSignal } from "../in-flight-work.js";
import { idempotencyKeyOf, nodeAfter } from "../workflow-engine.js";
import type { A2AInvokeNode, WorkflowDefinition } from "../workflow-types.js";
import { failureMessage, stillRunning, type NodeExecutor, type NodeRuntime } from "./node-executor.js";

/**
 * `a2a.invoke` nodes: call a remote A2A agent outside the lock (cancel aborts the call), committing the
 * peer's progress as it comes, then what the peer's task came to. A cancelled run cancels the peer's task
 * too, after our CANCELLED is committed (best effort).
 */
export function a2aInvokeNodeExecutor(runtime: NodeRuntime, peerInvoker: A2AInvokeRunner): NodeExecutor<A2AInvokeNode> {
  return {
    async step({ taskId, node, workflow, at }) {
      const record = await runtime.repository.commit(taskId, { type: "NODE_STARTED", at, nodeId: node.id });
      const context = runtime.repository.contextOf(record);
      return () => invokePeer(runtime, peerInvoker, { taskId, node, context, workflow });
    },
    onCancelled({ taskId, context, workflow }) {
      const peer = peerTaskToCancel(context, workflow, (nodeId) => idempotencyKeyOf(context, nodeId));
      return peer ? () => peerInvoker.cancelPeer(peer, `run ${taskId} was cancelled`) : undefined;
    },
  };
}

async function invokePeer(
  runtime: NodeRuntime,
  peerInvoker: A2AInvokeRunner,
  args: { taskId: string; node: A2AInvokeNode; context: TaskContext; workflow: WorkflowDefinition },
): Promise<void> {
  const { taskId, node, context, workflow } = args;
  const { repository } = runtime;
  const ran = await runtime.inFlight.run(taskId, (signal) =>
    peerInvoker.run({
      taskId,
      node,
      context,
      signal,
      record: (progress) =>
        repository.withLock(taskId, async () => {
          if (!(await stillRunning(repository, taskId, node.id))) return false;
          await repository.commit(taskId, { type: "NODE_PROGRESS", at: runtime.now(), nodeId: node.id, progress: progress as unknown as Record<string, unknown> });
          return true;
        }),
    }),
  );
  if (ran.signal.reason instanceof ShutdownSignal) throw ran.signal.reason;
  if ("error" in ran) throw ran.error;
  const outcome = ran.value as InvokeOutcome;
  if (outcome.type === "stopped") return;
  await repository.withLock(taskId, async () => {
    if (!(await stillRunning(repository, taskId, node.id))) return; // cancelled or paused meanwhile; dropped
    const at = runtime.now();
    const live = await repository.load(taskId);
    switch (outcome.type) {
      case "complete":
        await repository.commit(taskId, { type: "NODE_COMPLETED", at, nodeId: node.id, output: outcome.output, artifacts: outcome.artifacts, next: nodeAfter(workflow, node.id) });
        return;
      case "interrupt": {
        const peer = { agentCardUrl: outcome.agentCardUrl, task: outcome.task, ...(outcome.subkind ? { subkind: outcome.subkind } : {}) };
        const built = buildPeerInterrupt(node, live.actor.getSnapshot().context, at, { interruptId: randomUUID(), messageId: randomUUID() }, peer);
        await repository.commit(taskId, { type: "INTERRUPT", at, ...built });
        return;
      }
      case "fail":
        await repository.commit(taskId, { type: "FAIL", at, error: outcome.error, statusMessage: failureMessage(live.record, outcome.error.code) });
        return;
      case "cancel":
        // A cancel on the peer's side wins too: our run goes to cancelled (the driver commits CANCELLED next).
        await repository.commit(taskId, { type: "CANCEL", at, reason: CROSS_PROTOCOL_CANCEL, cancelledBy: `a2a-peer:${outcome.agentCardUrl}` });
        return;
    }
  });
}
