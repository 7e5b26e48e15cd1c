import { randomUUID } from "node:crypto";
import { didYouMean } from "../../../domain/closest-name.js";
import type { TaskContext } from "../../../machine/task-context.js";
import { buildPeerInterrupt, CROSS_PROTOCOL_CANCEL, peerProgressOf, peerTaskToCancel } from "./a2a-invoke.js";
import type { A2AInvokeRunner, InvokeOutcome } from "./a2a-invoke-runner.js";
import { ShutdownSignal } from "../../in-flight-work.js";
import { idempotencyKeyOf, nodeAfter } from "../../workflow-engine.js";
import type { A2AInvokeNode, WorkflowDefinition } from "../../../workflows/workflow-types.js";
import { failureMessage, stillRunning, type NodeExecutor, type NodeOutcome, type NodeRuntime } from "../node-executor.js";
import type { NodeCheckContext, NodeKind } from "../node-kind.js";

/** The kind, for the registry (node-registry.ts): the named-peer check at load, the executor. */
export const a2aInvokeNodeKind: NodeKind<A2AInvokeNode> = {
  check: a2aInvokeNodeProblem,
  executor: (runtime, services) => a2aInvokeNodeExecutor(runtime, services.peerInvoker),
};

/** A node naming a peer that is not configured, with where peers are configured and a likely typo named. */
export function a2aInvokeNodeProblem(node: A2AInvokeNode, context: NodeCheckContext): string | undefined {
  if (node.peer === undefined || context.peers.includes(node.peer)) return undefined;
  const configured = context.peers.length > 0 ? context.peers.join(", ") : "none";
  return `node "${node.id}": peer "${node.peer}" is not configured${didYouMean(node.peer, context.peers)} (configure it in A2A_PEERS, A2A_PEERS_FILE or startHost's peers; configured: ${configured})`;
}

/**
 * `a2a.invoke` nodes: call a remote A2A agent outside the lock (cancel aborts the call), committing the
 * peer's progress as it comes, then staging what the peer's task came to. A cancelled run cancels the peer's task
 * too, after our CANCELLED is committed (best effort).
 */
export function a2aInvokeNodeExecutor(runtime: NodeRuntime, peerInvoker: A2AInvokeRunner): NodeExecutor<A2AInvokeNode> {
  return {
    async step({ taskId, node, live, workflow, at }) {
      // The peer call acts outside this host: what came before is written first, then node.started alone.
      await runtime.repository.flush(taskId);
      const context = runtime.repository.stage(live, { type: "NODE_STARTED", at, nodeId: node.id }).context;
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
): Promise<NodeOutcome | void> {
  const { taskId, node, context, workflow } = args;
  const { repository } = runtime;
  const ran = await runtime.inFlight.run(taskId, (abort) =>
    peerInvoker.run({
      taskId,
      node,
      context,
      signal: abort.signal,
      record: (progress) =>
        repository.withLock(taskId, async () => {
          if (!stillRunning(await repository.load(taskId), node.id)) return false;
          await repository.commit(taskId, { type: "NODE_PROGRESS", at: runtime.now(), nodeId: node.id, progress: progress as unknown as Record<string, unknown> });
          return true;
        }, { fenced: true }),
      // Another instance committed to the task (a push it received): our cached copy is stale, read the store.
      stored: () =>
        repository.withLock(taskId, async () => {
          repository.passivate(taskId);
          const live = await repository.load(taskId);
          return peerProgressOf(live.actor.getSnapshot().context, node.id, idempotencyKeyOf(context, node.id));
        }),
    }),
  );
  if (ran.abort.reason instanceof ShutdownSignal) throw ran.abort.reason;
  if ("error" in ran) throw ran.error;
  const outcome = ran.value as InvokeOutcome;
  if (outcome.type === "stopped") return;
  return (live) => {
    if (!stillRunning(live, node.id)) return; // cancelled or paused meanwhile; dropped
    const at = runtime.now();
    switch (outcome.type) {
      case "complete":
        repository.stage(live, { type: "NODE_COMPLETED", at, nodeId: node.id, output: outcome.output, artifacts: outcome.artifacts, next: nodeAfter(workflow, node.id) });
        return;
      case "interrupt": {
        const peer = { agentCardUrl: outcome.agentCardUrl, task: outcome.task, ...(outcome.subkind ? { subkind: outcome.subkind } : {}) };
        const built = buildPeerInterrupt(node, live.actor.getSnapshot().context, at, { interruptId: randomUUID(), messageId: randomUUID() }, peer);
        repository.stage(live, { type: "INTERRUPT", at, ...built });
        return;
      }
      case "fail":
        repository.stage(live, { type: "FAIL", at, error: outcome.error, statusMessage: failureMessage(live.record, outcome.error.code) });
        return;
      case "cancel":
        // A cancel on the peer's side wins too: our run goes to cancelled (the driver commits CANCELLED next).
        repository.stage(live, { type: "CANCEL", at, reason: CROSS_PROTOCOL_CANCEL, cancelledBy: `a2a-peer:${outcome.agentCardUrl}` });
        return;
    }
  };
}
