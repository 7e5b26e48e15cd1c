import { createHash } from "node:crypto";
import type { Artifact, Message, Part } from "../../../domain/a2a-types.js";
import { isA2ATaskState, isInterruptedA2AState, isTerminalA2AState } from "../../../domain/run-status.js";
import type { PendingInterrupt, RunError, TaskContext } from "../../../machine/task-context.js";
import type { PeerStreamEvent, PeerTask } from "../../../peer/peer-types.js";
import type { A2AInvokeNode } from "../../../workflows/workflow-types.js";

/**
 * The pure half of the `a2a.invoke` node (the host as an A2A client): how a peer's task projects onto our
 * run, what is recorded as node progress, the interrupt a peer's input-required raises, and what our
 * caller's answer becomes. The I/O half is `a2a-invoke-runner.ts`; the supervisor commits the results.
 *
 * Reverse projection (openwop-facts §1 differences 13, 14):
 *   submitted, working          → keep waiting (poll `tasks/get`); the run stays running
 *   input-required              → waiting-input: a clarification interrupt carrying the peer's message
 *   auth-required               → waiting-input, interrupt `metadata.subkind: "auth"`
 *   completed                   → the node's output; the peer's artifacts become ours, tagged untrusted
 *   failed                      → run failed (`failed_by_remote`)
 *   rejected                    → run failed (`rejected_by_remote`)
 *   canceled                    → run cancelled (reason `cross_protocol_cancel`)
 *   unknown / anything else     → keep waiting, with a logged warning
 * Everything the peer says is content, never control: it is tagged `contentTrust: "untrusted"` and is never
 * read as a resume value, so it cannot resolve one of our approval gates.
 */

export const EXTERNAL_CALL_FAILED = "external_call_failed";
export const REJECTED_BY_REMOTE = "rejected_by_remote";
export const FAILED_BY_REMOTE = "failed_by_remote";
export const CROSS_PROTOCOL_CANCEL = "cross_protocol_cancel";
export const UNTRUSTED = "untrusted";
/** The id of the single question a peer interrupt asks: a text reply answers it. */
export const PEER_REPLY_QUESTION_ID = "reply";

export type { PeerReply, PeerTask } from "../../../peer/peer-types.js";

/**
 * What an a2a.invoke node records in `nodeProgress` (and so in `node.progress` log events) as soon as the
 * peer answers: after a restart the node resumes from here with `tasks/get`, it never sends again.
 */
export interface PeerProgress {
  /** The idempotency key of the node visit this belongs to (`taskId:nodeId:visit`). */
  key: string;
  agentCardUrl: string;
  /**
   * The peer's endpoint, from its card or its configuration: `<binding>+<version>+<url>` (e.g. `jsonrpc+1.0+https://…`,
   * `grpc+1.0+https://host:port`); one recorded by an older host (a bare JSON-RPC URL, `grpc+https://…`) reads as 0.3.
   */
  endpoint: string;
  /** The named peer called (`peer:` on the node): its credentials are looked up by this name on every call, never recorded. */
  peer?: string;
  /** The header the named peer's API key goes in (from its card), if it uses one. */
  apiKeyHeader?: string;
  peerTaskId: string;
  peerContextId: string;
  /** The peer's last state (wire value) and status fingerprint (state, status message id, timestamp). */
  peerState: string;
  peerStatus: string;
  /** When the peer's current status was stamped (its `status.timestamp`), if it says: older pushes are replays. */
  peerStatusAt?: string;
  /**
   * How this node learns what becomes of the peer's task: "push" (a push config with our callback was registered
   * with the send), "stream" (SubscribeToTask / tasks/resubscribe held open), "poll" (GetTask every A2A_PEER_POLL_MS).
   * With push or stream, GetTask is only the backstop (A2A_PEER_BACKSTOP_POLL_MS) and the catch-up after a restart.
   */
  notify?: "push" | "stream" | "poll";
  /** Set by the callback receiver when it committed a pushed state (the runner holding the lease reads the task next). */
  pushedAt?: string;
  /** The last message we sent the peer, and when: a node's `timeoutMs` counts from here. */
  sentMessageId: string;
  sentAt: string;
  /** The interrupted peer status our caller answered; seeing it again means the peer has not taken the reply yet. */
  answeredStatus?: string;
  /** Our caller's answer, not yet delivered to the peer (it is delivered exactly once, checked against the peer's history). */
  pendingReply?: { messageId: string; interruptId: string; parts: Part[] };
}

export type PeerDecision =
  | { type: "wait"; unknownState?: string }
  | { type: "complete"; output: Record<string, unknown>; artifacts: Artifact[] }
  | { type: "interrupt"; subkind?: "auth" }
  | { type: "fail"; error: RunError }
  | { type: "cancel" };

export function isTerminalPeerState(state: string): boolean {
  return isA2ATaskState(state) && isTerminalA2AState(state);
}

export function isInterruptedPeerState(state: string): boolean {
  return isA2ATaskState(state) && isInterruptedA2AState(state);
}

/** A UUID-shaped id derived from a seed: the same seed always gives the same messageId (idempotent sends). */
export function peerMessageId(seed: string): string {
  const hex = createHash("sha256").update(`openwop-a2a-invoke:${seed}`).digest("hex");
  // RFC 9562 layout with version 8 (custom) and the RFC variant bits.
  const variant = ((parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Identifies one peer status (its state and status message, or its timestamp when it has no message), so the
 * question our caller answered is not taken for a new one.
 */
export function peerStatusOf(task: PeerTask): string {
  return `${task.state}|${task.statusMessage?.messageId ?? task.statusTimestamp ?? ""}`;
}

/**
 * Whether a read of the peer task is worth a `node.progress` event: a new state, or a new question while
 * interrupted. (Not a new timestamp alone: some agents stamp every read, and the log is not a poll trace.)
 */
export function peerStatusChanged(progress: PeerProgress, task: PeerTask): boolean {
  return (
    task.state !== progress.peerState ||
    (isInterruptedPeerState(task.state) && peerStatusOf(task) !== progress.peerStatus)
  );
}

/** A URL as shown to callers and in messages: without query, fragment or userinfo (they may carry secrets). */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return "(not a URL)";
  }
}

/** The recorded progress of the current visit of `nodeId`, if any (progress of an earlier visit is ignored). */
export function peerProgressOf(context: TaskContext, nodeId: string, key: string): PeerProgress | undefined {
  const progress = context.nodeProgress?.[nodeId] as PeerProgress | undefined;
  return progress && progress.key === key && typeof progress.peerTaskId === "string" ? progress : undefined;
}

/** The text of a message's text parts. */
export function textOf(message: Message | undefined): string {
  return (message?.parts ?? [])
    .flatMap((p) => (p.kind === "text" ? [p.text] : []))
    .join("\n")
    .trim();
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The first message of an a2a.invoke: the node's `message`, else the run's input (text and data parts). */
export function initialPeerMessage(
  node: A2AInvokeNode,
  input: { text: string; data: Record<string, unknown> },
  messageId: string,
): Message {
  const parts: Part[] = [];
  if (node.message !== undefined) {
    parts.push({ kind: "text", text: node.message });
  } else {
    if (input.text || Object.keys(input.data).length === 0) parts.push({ kind: "text", text: input.text });
    if (Object.keys(input.data).length > 0) parts.push({ kind: "data", data: input.data });
  }
  return { messageId, role: "user", parts, ...(node.skillId ? { metadata: { skillId: node.skillId } } : {}) };
}

/** The first recorded progress, from the peer's answer to our first message. */
export function firstProgress(args: {
  key: string;
  agentCardUrl: string;
  endpoint: string;
  peer?: string;
  apiKeyHeader?: string;
  messageId: string;
  at: string;
  task: PeerTask;
}): PeerProgress {
  const { task } = args;
  return {
    key: args.key,
    agentCardUrl: shownUrl(args.agentCardUrl),
    endpoint: args.endpoint,
    ...(args.peer !== undefined ? { peer: args.peer } : {}),
    ...(args.apiKeyHeader !== undefined ? { apiKeyHeader: args.apiKeyHeader } : {}),
    peerTaskId: task.id,
    peerContextId: task.contextId,
    peerState: task.state,
    peerStatus: peerStatusOf(task),
    sentMessageId: args.messageId,
    sentAt: args.at,
  };
}

/** Progress after reading the peer task again. */
export function withPeerStatus(progress: PeerProgress, task: PeerTask): PeerProgress {
  const { peerStatusAt: _old, pushedAt: _pushed, ...rest } = progress;
  return {
    ...rest,
    peerState: task.state,
    peerStatus: peerStatusOf(task),
    ...(task.statusTimestamp ? { peerStatusAt: task.statusTimestamp } : {}),
  };
}

/**
 * Whether a pushed peer status says something the recorded progress does not: nothing follows a terminal state
 * (a recorded one ends it; a pushed one is always news), the same state again is news only with a newer timestamp
 * (a new question while interrupted), and a status stamped before the recorded one is a replay.
 */
export function isNewPeerStatus(
  progress: Pick<PeerProgress, "peerState" | "peerStatusAt">,
  pushed: { state: string; timestamp?: string },
): boolean {
  if (isTerminalPeerState(progress.peerState)) return false;
  // Nothing follows a terminal state, so a terminal push is never a replay of an older status (whatever its clock says).
  if (isTerminalPeerState(pushed.state)) return true;
  const at = pushed.timestamp !== undefined ? Date.parse(pushed.timestamp) : NaN;
  const recordedAt = progress.peerStatusAt !== undefined ? Date.parse(progress.peerStatusAt) : NaN;
  if (!Number.isNaN(at) && !Number.isNaN(recordedAt) && at < recordedAt) return false;
  if (pushed.state !== progress.peerState) return true;
  return !Number.isNaN(at) && !Number.isNaN(recordedAt) && at > recordedAt && isInterruptedPeerState(pushed.state);
}

/** A stream event folded into the task as last seen (a whole task replaces it; updates of another task are ignored). */
export function foldPeerEvent(current: PeerTask, event: PeerStreamEvent): PeerTask {
  if (event.kind === "task") return event.task.id === current.id ? event.task : current;
  if (event.taskId !== current.id) return current;
  if (event.kind === "status") {
    const { statusMessage: _m, statusTimestamp: _t, ...rest } = current;
    const history =
      event.statusMessage && !current.history.some((m) => m.messageId === event.statusMessage!.messageId)
        ? [...current.history, event.statusMessage]
        : current.history;
    return {
      ...rest,
      state: event.state,
      history,
      ...(event.statusMessage ? { statusMessage: event.statusMessage } : {}),
      ...(event.statusTimestamp ? { statusTimestamp: event.statusTimestamp } : {}),
    };
  }
  const index = current.artifacts.findIndex((a) => a.artifactId === event.artifact.artifactId);
  const artifacts = [...current.artifacts];
  if (index < 0) artifacts.push(event.artifact);
  else if (event.append)
    artifacts[index] = { ...artifacts[index]!, parts: [...artifacts[index]!.parts, ...event.artifact.parts] };
  else artifacts[index] = event.artifact;
  return { ...current, artifacts };
}

/** Peer artifacts as ours: ids prefixed with the node id, tagged untrusted and with their origin. */
export function peerArtifacts(nodeId: string, agentCardUrl: string, task: PeerTask): Artifact[] {
  return task.artifacts.map((a) => ({
    artifactId: `${nodeId}.${a.artifactId}`,
    ...(a.name !== undefined ? { name: a.name } : {}),
    ...(a.description ? { description: a.description } : {}),
    parts: a.parts,
    // Ours last: the peer cannot claim to be trusted.
    metadata: {
      ...a.metadata,
      contentTrust: UNTRUSTED,
      a2aPeer: { agentCardUrl: shownUrl(agentCardUrl), taskId: task.id, artifactId: a.artifactId },
    },
  }));
}

function peerSummary(agentCardUrl: string, task: PeerTask, name?: string): Record<string, unknown> {
  return {
    ...(name !== undefined ? { name } : {}),
    agentCardUrl: shownUrl(agentCardUrl),
    taskId: task.id,
    contextId: task.contextId,
    state: task.state,
  };
}

/** The message content a peer sent, reduced to what our callers may see (id, role, parts). */
function peerMessageView(message: Message | undefined): Record<string, unknown> | undefined {
  return message ? { messageId: message.messageId, role: message.role, parts: message.parts } : undefined;
}

/** Projects the peer's task onto our run (see the table at the top of this file). */
export function projectPeerTask(
  node: A2AInvokeNode,
  agentCardUrl: string,
  task: PeerTask,
  progress: PeerProgress | undefined,
): PeerDecision {
  switch (task.state) {
    case "submitted":
    case "working":
      return { type: "wait" };
    case "input-required":
    case "auth-required":
      // Right after we forward an answer the peer may still show the status we answered.
      if (progress?.answeredStatus !== undefined && progress.answeredStatus === peerStatusOf(task))
        return { type: "wait" };
      return task.state === "auth-required" ? { type: "interrupt", subkind: "auth" } : { type: "interrupt" };
    case "completed": {
      const artifacts = peerArtifacts(node.id, agentCardUrl, task);
      const message = peerMessageView(task.statusMessage);
      return {
        type: "complete",
        artifacts,
        output: {
          peer: peerSummary(agentCardUrl, task, node.peer),
          artifactIds: artifacts.map((a) => a.artifactId),
          ...(message ? { message } : {}),
          ...(textOf(task.statusMessage) ? { text: textOf(task.statusMessage) } : {}),
          contentTrust: UNTRUSTED,
        },
      };
    }
    case "failed":
    case "rejected": {
      const said = textOf(task.statusMessage);
      const rejected = task.state === "rejected";
      const message = `the remote agent ${rejected ? "rejected" : "failed"} task ${task.id}${said ? `; it said (untrusted): ${clip(said, 300)}` : ""}`;
      return {
        type: "fail",
        error: { code: rejected ? REJECTED_BY_REMOTE : FAILED_BY_REMOTE, message, nodeId: node.id },
      };
    }
    case "canceled":
      return { type: "cancel" };
    default:
      return { type: "wait", unknownState: task.state };
  }
}

/** A peer that answered `message/send` with a plain message (no task) is done: that message is the output. */
export function projectPeerMessage(agentCardUrl: string, message: Message): PeerDecision {
  return {
    type: "complete",
    artifacts: [],
    output: {
      peer: { agentCardUrl: shownUrl(agentCardUrl), state: "completed" },
      message: peerMessageView(message),
      ...(textOf(message) ? { text: textOf(message) } : {}),
      contentTrust: UNTRUSTED,
    },
  };
}

/** The clarification interrupt a peer's input-required / auth-required raises, and our status message. */
export function buildPeerInterrupt(
  node: A2AInvokeNode,
  context: TaskContext,
  at: string,
  ids: { interruptId: string; messageId: string },
  peer: { agentCardUrl: string; task: PeerTask; subkind?: "auth" },
): { interrupt: PendingInterrupt; statusMessage: Message } {
  const auth = peer.subkind === "auth";
  const said = clip(textOf(peer.task.statusMessage), 2000);
  const question =
    said ||
    (auth ? "The remote agent needs authentication before it can continue." : "The remote agent needs more input.");
  const metadata: Record<string, unknown> = {
    source: "a2a.invoke",
    contentTrust: UNTRUSTED,
    ...(auth ? { subkind: "auth" } : {}),
  };
  const peerMessage = peerMessageView(peer.task.statusMessage);
  const data: Record<string, unknown> = {
    questions: [{ id: PEER_REPLY_QUESTION_ID, question }],
    peer: { ...peerSummary(peer.agentCardUrl, peer.task, node.peer), ...(peerMessage ? { message: peerMessage } : {}) },
    contentTrust: UNTRUSTED,
    metadata,
  };
  const interrupt: PendingInterrupt = {
    interruptId: ids.interruptId,
    nodeId: node.id,
    kind: "clarification",
    data,
    requestedAt: at,
    exchanges: [],
    metadata,
  };
  const lead = auth ? "The remote agent needs authentication" : "The remote agent needs input";
  const text = `${lead} (node "${node.id}"). It says (untrusted content): ${question} Reply with text or a data part; the reply is forwarded to the remote agent.`;
  const statusMessage: Message = {
    messageId: ids.messageId,
    role: "agent",
    taskId: context.taskId,
    contextId: context.contextId,
    parts: [
      { kind: "text", text },
      {
        kind: "data",
        data: { interrupt: { kind: "clarification", nodeId: node.id, interruptId: ids.interruptId, ...data } },
        metadata: { contentTrust: UNTRUSTED },
      },
    ],
  };
  return { interrupt, statusMessage };
}
