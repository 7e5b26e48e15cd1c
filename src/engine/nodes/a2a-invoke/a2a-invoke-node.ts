import type { NegotiationDecided } from "../../../domain/negotiation.js";
import { randomUUID } from "node:crypto";
import { didYouMean } from "../../../domain/closest-name.js";
import { originOf } from "../../../domain/url-origin.js";
import type { TaskContext } from "../../../machine/task-context.js";
import { unexpandedVariables, VARIABLE_REFERENCE } from "../../../workflows/workflow-variables.js";
import { buildPeerInterrupt, CROSS_PROTOCOL_CANCEL, peerProgressOf } from "./a2a-invoke.js";
import { peerReplyFromText, peerReplyOutcome, peerTaskToCancel } from "./a2a-invoke-replies.js";
import { PeerInvokeProbe } from "./a2a-invoke-probe.js";
import { A2AInvokeRunner, DEFAULT_A2A_INVOKE_SETTINGS, type InvokeOutcome } from "./a2a-invoke-runner.js";
import { PeerCallbackService } from "./peer-callback-service.js";
import { ShutdownSignal } from "../../in-flight-work.js";
import { idempotencyKeyOf, nodeAfter } from "../../workflow-walk.js";
import type { A2AInvokeNode, WorkflowDefinition } from "../../../workflows/workflow-types.js";
import {
  failureMessage,
  stillRunning,
  type NodeExecutor,
  type NodeOutcome,
  type NodeRuntime,
} from "../node-executor.js";
import type {
  NodeCheckContext,
  NodeExpandContext,
  NodeHostDeps,
  EngineNodeKind,
  NodeRoute,
  NodeServiceParts,
  NodeWaiting,
} from "../node-kind.js";

/**
 * The kind's services: the runner its executor calls peers with, the receiver of their pushes (none without a
 * callback key), and the invoke seam's probe (none in an engine built without a peer client).
 */
export interface A2AInvokeServices {
  peerInvoker: A2AInvokeRunner;
  peerCallbacks?: PeerCallbackService;
  probe?: PeerInvokeProbe;
}

/** The path peers push to (the same in the callback URL the runner registers: peer/peer-callbacks.ts). */
export const PEER_CALLBACK_PATH = "/v1/peer-callbacks/{taskId}";

/**
 * The kind, for the registry (node-registry.ts): named peers and `${NAME}` in agentCardUrl at load, the executor,
 * the reply forwarded to the peer, its runner and callback receiver (its route), the invoke seam (its probe), how
 * the console shows it.
 */
export const a2aInvokeNodeKind: EngineNodeKind<A2AInvokeNode, A2AInvokeServices> = {
  expand: expandAgentCardUrl,
  check: a2aInvokeNodeProblem,
  // A remote agent's question: the answer goes to the remote agent. Never an approval decision.
  reply: {
    interpret: ({ node, context, interrupt, resumeValue, decision }) => ({
      type: "resume",
      ...peerReplyOutcome(node, context, interrupt, resumeValue, decision, idempotencyKeyOf(context, node.id)),
    }),
    fromText: (text) => peerReplyFromText(text),
  },
  createServices: a2aInvokeServices,
  routes: (services) => (services.peerCallbacks ? [peerCallbackRoute(services.peerCallbacks)] : []),
  seams: (services) => (services.probe ? { invokePeer: services.probe } : {}),
  executor: (runtime, services) => a2aInvokeNodeExecutor(runtime, services.peerInvoker),
  view: {
    title: (node) => `call ${originOf(node.agentCardUrl)}`,
    remote: (node) => ({ agent: originOf(node.agentCardUrl), ...(node.skillId ? { skillId: node.skillId } : {}) }),
    waitingFor: peerWaitingFor,
  },
};

/** Its runner and receiver, from the host's peer pieces (an engine built without them fails its nodes). */
function a2aInvokeServices(deps: NodeHostDeps): NodeServiceParts<A2AInvokeServices> {
  const host = deps.peers;
  const runner = new A2AInvokeRunner(host?.client, host?.settings ?? DEFAULT_A2A_INVOKE_SETTINGS, deps.logger, {
    callbacks:
      host?.callbackKey && host.callbackBaseUrl
        ? { baseUrl: host.callbackBaseUrl, key: host.callbackKey, peers: host.settings.peers }
        : undefined,
    // A push committed by another instance wakes the node here (the bus's change stream; the news board ignores polling).
    commits: deps.commits,
    clock: deps.clock,
  });
  const receiver = host?.callbackKey
    ? new PeerCallbackService({
        progress: deps.progress,
        reads: deps.reads,
        key: host.callbackKey,
        peers: host.settings.peers,
        jwks: host.jwks,
        news: runner.news,
        versions: host.versions,
        logger: deps.logger,
      })
    : undefined;
  // The invoke seam drives its own runner (one attempt, no push) over the same client and egress guard.
  const probe = host ? new PeerInvokeProbe(host.client, host.settings, deps.reads, deps.logger) : undefined;
  return {
    services: {
      peerInvoker: runner,
      ...(receiver ? { peerCallbacks: receiver } : {}),
      ...(probe ? { probe } : {}),
    },
  };
}

/**
 * `POST /v1/peer-callbacks/{taskId}`: where peers called by our `a2a.invoke` nodes push their task's changes. No
 * API key (peers do not hold ours): the per-task token (`X-A2A-Notification-Token` or `Authorization: Bearer`) is
 * the credential (who may wake us), checked by the receiver; the body counts as the peer's word only when signed
 * with the peer's configured key, else it only wakes the node, which reads the peer's task. 2xx only once a signed
 * state is committed or the node woken.
 */
function peerCallbackRoute(receiver: PeerCallbackService): NodeRoute {
  return {
    method: "POST",
    path: PEER_CALLBACK_PATH,
    public: true,
    async handle({ params, headers, body }) {
      const result = await receiver.receive({ taskId: params["taskId"]!, headers, body });
      const extra: Record<string, string> =
        result.retryAfterSeconds !== undefined ? { "retry-after": String(result.retryAfterSeconds) } : {};
      if (result.status === 401) extra["www-authenticate"] = 'Bearer realm="openwop-a2a-host peer callbacks"';
      return { status: result.status, body: { outcome: result.outcome }, headers: extra };
    },
  };
}

/** A task at this node waits for the peer: its reply to the peer's question, or the peer's task to move on. */
function peerWaitingFor(node: A2AInvokeNode, context: TaskContext, status: string): NodeWaiting | undefined {
  const interrupt = context.interrupt;
  if (interrupt?.nodeId === node.id && status.startsWith("waiting-")) {
    return {
      kind: "peer",
      label: `a reply to the peer agent ${originOf(node.agentCardUrl)}`,
      nodeId: node.id,
      since: interrupt.requestedAt,
      ...(interrupt.expiresAt ? { until: interrupt.expiresAt } : {}),
    };
  }
  if (context.cursor !== node.id || !context.nodeStarted || ["completed", "failed", "cancelled"].includes(status))
    return undefined;
  const progress = context.nodeProgress?.[node.id];
  const state = typeof progress?.["peerState"] === "string" ? ` (${progress["peerState"]})` : "";
  return { kind: "peer", label: `the peer agent ${originOf(node.agentCardUrl)}${state}`, nodeId: node.id };
}

/** A stand-in that passes `format: uri` while a reference stays unexpanded; only the schema check sees it. */
const UNSET_STAND_IN = "https://unset-variable.invalid/";

/**
 * `${NAME}` in agentCardUrl is expanded from the configured variables; a name that is not a known variable is a
 * problem, and one that is known but not configured stays in place (the node then fails when it runs, naming the
 * variable), so the definition still loads. A named peer's node shows the peer's card URL (or url) as its
 * agentCardUrl; the schema sees it as written.
 */
function expandAgentCardUrl(
  node: Readonly<Record<string, unknown>>,
  context: NodeExpandContext,
  problems: string[],
): { node: unknown; forValidation: unknown } | undefined {
  const url = node["agentCardUrl"];
  const peer = node["peer"];
  if (url === undefined && typeof peer === "string" && Object.hasOwn(context.peers, peer))
    return { node: { ...node, agentCardUrl: context.peers[peer] }, forValidation: node };
  if (typeof url !== "string" || unexpandedVariables(url).length === 0) return undefined;
  for (const name of unexpandedVariables(url)) {
    if (!context.known.includes(name) && !Object.hasOwn(context.variables, name)) {
      const known = [...new Set([...context.known, ...Object.keys(context.variables)])];
      problems.push(
        `node "${String(node["id"])}": agentCardUrl refers to \${${name}}, which is not a variable workflows may use (add ${name} to WORKFLOW_VARIABLES; known: ${known.join(", ")})`,
      );
    }
  }
  const result = url.replace(VARIABLE_REFERENCE, (whole, name: string) => context.variables[name] ?? whole);
  return {
    node: { ...node, agentCardUrl: result },
    forValidation: { ...node, agentCardUrl: unexpandedVariables(result).length ? UNSET_STAND_IN : result },
  };
}

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
  const commitProgress = (progress: Record<string, unknown> | undefined, negotiation?: NegotiationDecided) =>
    repository.withLock(
      taskId,
      async () => {
        const live = await repository.load(taskId);
        if (!stillRunning(live, node.id)) return false;
        await repository.commit(taskId, {
          type: "NODE_PROGRESS",
          at: runtime.now(),
          nodeId: node.id,
          progress: progress ?? live.actor.getSnapshot().context.nodeProgress?.[node.id] ?? {},
          ...(negotiation ? { negotiation } : {}),
        });
        return true;
      },
      { fenced: true },
    );
  const ran = await runtime.inFlight.run(taskId, (abort) =>
    peerInvoker.run({
      taskId,
      node,
      context,
      signal: abort.signal,
      record: (progress, negotiation) => commitProgress(progress as unknown as Record<string, unknown>, negotiation),
      // A negotiation without progress: the node's entry as it stands (none yet: an empty one).
      negotiated: (negotiation) => commitProgress(undefined, negotiation),
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
        repository.stage(live, {
          type: "NODE_COMPLETED",
          at,
          nodeId: node.id,
          output: outcome.output,
          artifacts: outcome.artifacts,
          next: nodeAfter(workflow, node.id),
        });
        return;
      case "interrupt": {
        const peer = {
          agentCardUrl: outcome.agentCardUrl,
          task: outcome.task,
          ...(outcome.subkind ? { subkind: outcome.subkind } : {}),
        };
        const built = buildPeerInterrupt(
          node,
          live.actor.getSnapshot().context,
          at,
          { interruptId: randomUUID(), messageId: randomUUID() },
          peer,
        );
        repository.stage(live, { type: "INTERRUPT", at, ...built });
        return;
      }
      case "fail":
        repository.stage(live, {
          type: "FAIL",
          at,
          error: outcome.error,
          statusMessage: failureMessage(live.record, outcome.error.code),
        });
        return;
      case "cancel":
        // A cancel on the peer's side wins too: our run goes to cancelled (the driver commits CANCELLED next).
        repository.stage(live, {
          type: "CANCEL",
          at,
          reason: CROSS_PROTOCOL_CANCEL,
          cancelledBy: `a2a-peer:${outcome.agentCardUrl}`,
        });
        return;
    }
  };
}
