import type { Artifact, Message } from "../domain/a2a-types.js";
import { decideRetry, type RetryPolicy } from "../domain/retry-policy.js";
import type { RunError, TaskContext } from "../machine/task-context.js";
import type { Logger } from "../observability/logger.js";
import type { A2APeerClient } from "../peer/a2a-peer-client.js";
import { PeerCallError } from "../peer/peer-http-client.js";
import type { A2AInvokeSettings } from "../peer/peer-settings.js";
import type { PeerTask } from "../peer/peer-types.js";
import {
  EXTERNAL_CALL_FAILED,
  firstProgress,
  initialPeerMessage,
  isInterruptedPeerState,
  isTerminalPeerState,
  peerMessageId,
  peerProgressOf,
  peerStatusChanged,
  projectPeerMessage,
  projectPeerTask,
  shownUrl,
  withPeerStatus,
  type PeerProgress,
} from "./a2a-invoke.js";
import { unexpandedVariables } from "./workflow-catalog.js";
import { idempotencyKeyOf, runInputOf } from "./workflow-engine.js";
import type { A2AInvokeNode } from "./workflow-types.js";
import { abortableSleep } from "./abortable-sleep.js";

/** Peer calls retry transport errors with ±20 % jitter around the exponential delay. */
const PEER_JITTER = { min: 0.8, max: 1.2 } as const;

export const DEFAULT_A2A_INVOKE_SETTINGS: A2AInvokeSettings = {
  pollMs: 1_000,
  timeoutMs: 10 * 60 * 1000,
  maxAttempts: 5,
  retryBaseMs: 500,
  retryMaxMs: 10_000,
  requestTimeoutMs: 15_000,
};

/** What the node comes to; the supervisor commits it. "stopped": the run moved on (cancel, shutdown), nothing to commit. */
export type InvokeOutcome =
  | { type: "complete"; output: Record<string, unknown>; artifacts: Artifact[] }
  | { type: "interrupt"; subkind?: "auth"; task: PeerTask; agentCardUrl: string }
  | { type: "fail"; error: RunError }
  | { type: "cancel"; agentCardUrl: string }
  | { type: "stopped" };

export interface InvokeRun {
  taskId: string;
  node: A2AInvokeNode;
  context: TaskContext;
  /** Aborted when our run is cancelled or the host shuts down. */
  signal: AbortSignal;
  /** Commits a `NODE_PROGRESS`; false when the run no longer runs this node (then nothing more may be committed). */
  record(progress: PeerProgress): Promise<boolean>;
}


function failed(nodeId: string, message: string): InvokeOutcome {
  return { type: "fail", error: { code: EXTERNAL_CALL_FAILED, message, nodeId } };
}

/**
 * The I/O half of the `a2a.invoke` node: discovers the peer, sends the message (once: a deterministic
 * messageId from the node's idempotency key, and the peer's task id committed as node progress as soon as
 * it answers), forwards our caller's answers, polls `tasks/get` until the peer's task reaches a state that
 * means something to our run, and retries transport errors with backoff. Projection rules: a2a-invoke.ts.
 */
export class A2AInvokeRunner {
  constructor(
    private readonly client: A2APeerClient | undefined,
    private readonly settings: A2AInvokeSettings,
    private readonly logger: Logger,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async run(r: InvokeRun): Promise<InvokeOutcome> {
    const { node, context, signal } = r;
    const unset = unexpandedVariables(node.agentCardUrl);
    if (unset.length > 0) {
      return failed(node.id, `the remote agent is not configured: agentCardUrl "${node.agentCardUrl}" needs ${unset.join(", ")}, which is not set`);
    }
    const client = this.client;
    if (!client) return failed(node.id, "this host has no A2A client configured");
    const key = idempotencyKeyOf(context, node.id);
    const log = this.logger.child({ taskId: r.taskId, nodeId: node.id });
    let progress = peerProgressOf(context, node.id, key);
    try {
      let task: PeerTask;
      if (!progress) {
        const { endpoint } = await this.retrying("reading the agent card", () => client.discover(node.agentCardUrl, signal), signal, log);
        const messageId = peerMessageId(`${key}:send`);
        const message = initialPeerMessage(node, runInputOf(context), messageId);
        // The send is not abandoned on cancel or shutdown (only on its own deadline): once the peer has
        // answered we must learn its task id, to record it or to cancel it.
        const reply = await this.retrying("sending the message", () => client.send(endpoint, message), signal, log);
        if (reply.kind === "message") return this.outcome(projectPeerMessage(node.agentCardUrl, reply.message), node, reply);
        task = reply.task;
        progress = firstProgress({ key, agentCardUrl: node.agentCardUrl, endpoint, messageId, at: this.now(), task });
        log.info({ peerTaskId: task.id, peerState: task.state }, "remote agent accepted the message");
        if (!(await r.record(progress))) {
          if (!isTerminalPeerState(task.state)) await this.cancelPeer(progress, "the run stopped while the message was in flight");
          return { type: "stopped" };
        }
        if (signal.aborted) return { type: "stopped" };
      } else {
        task = await this.retrying("reading the remote task", () => client.getTask(progress!.endpoint, progress!.peerTaskId, signal), signal, log);
      }

      if (progress.pendingReply) {
        const pending = progress.pendingReply;
        // Delivered exactly once: not if the peer's history already holds it (sent before a restart), and not
        // if the peer has moved on (it no longer waits for an answer).
        const delivered = task.history.some((m) => m.messageId === pending.messageId);
        if (!delivered && isInterruptedPeerState(task.state)) {
          const reply: Message = { messageId: pending.messageId, role: "user", parts: pending.parts, taskId: progress.peerTaskId, contextId: progress.peerContextId };
          const endpoint = progress.endpoint;
          const answer = await this.retrying("forwarding the reply", () => client.send(endpoint, reply), signal, log);
          if (answer.kind === "task") task = answer.task;
          log.info({ peerTaskId: progress.peerTaskId }, "forwarded the caller's reply to the remote agent");
        } else if (!delivered) {
          log.warn({ peerTaskId: progress.peerTaskId, peerState: task.state }, "the remote task no longer waits for input; the caller's reply was not forwarded");
        }
        const { pendingReply: _sent, ...rest } = progress;
        progress = { ...withPeerStatus(rest, task), sentMessageId: pending.messageId, sentAt: this.now() };
        if (!(await r.record(progress))) return { type: "stopped" };
      }

      for (;;) {
        const decision = projectPeerTask(node, progress.agentCardUrl, task, progress);
        if (peerStatusChanged(progress, task)) {
          if (decision.type === "wait" && decision.unknownState !== undefined) {
            log.warn({ peerTaskId: task.id, peerState: decision.unknownState }, "the remote task is in an unknown state; still waiting");
          }
          progress = withPeerStatus(progress, task);
          if (!(await r.record(progress))) return { type: "stopped" };
        }
        if (decision.type !== "wait") return this.outcome(decision, node, { kind: "task", task });
        const timeoutMs = node.timeoutMs ?? this.settings.timeoutMs;
        if (this.clock().getTime() - Date.parse(progress.sentAt) > timeoutMs) {
          await this.cancelPeer(progress, "the node timed out");
          return failed(node.id, `the remote agent did not finish within ${timeoutMs} ms (task ${task.id} is still ${task.state})`);
        }
        await abortableSleep(this.settings.pollMs, signal);
        const current = progress;
        task = await this.retrying("reading the remote task", () => client.getTask(current.endpoint, current.peerTaskId, signal), signal, log);
      }
    } catch (err) {
      if (signal.aborted) return { type: "stopped" };
      if (err instanceof PeerCallError) {
        log.warn({ err: { kind: err.kind, message: err.message } }, "a2a.invoke failed");
        return failed(node.id, `calling the remote agent at ${shownUrl(node.agentCardUrl)} failed: ${err.message}`);
      }
      throw err;
    }
  }

  /** Best-effort `tasks/cancel` of a peer task (our run was cancelled or gave up). Never throws; logged. */
  async cancelPeer(progress: PeerProgress, why: string): Promise<void> {
    if (!this.client) return;
    const log = this.logger.child({ peerTaskId: progress.peerTaskId, endpoint: progress.endpoint });
    try {
      const task = await this.client.cancelTask(progress.endpoint, progress.peerTaskId, AbortSignal.timeout(this.settings.requestTimeoutMs));
      log.info({ peerState: task.state, why }, "cancelled the remote task");
    } catch (err) {
      log.warn({ err: err instanceof PeerCallError ? { kind: err.kind, message: err.message } : err, why }, "could not cancel the remote task (best effort)");
    }
  }

  private outcome(decision: ReturnType<typeof projectPeerTask>, node: A2AInvokeNode, reply: { kind: "task"; task: PeerTask } | { kind: "message" }): InvokeOutcome {
    switch (decision.type) {
      case "complete":
        return { type: "complete", output: decision.output, artifacts: decision.artifacts };
      case "fail":
        return { type: "fail", error: decision.error };
      case "cancel":
        return { type: "cancel", agentCardUrl: shownUrl(node.agentCardUrl) };
      case "interrupt":
        if (reply.kind !== "task") return failed(node.id, "the remote agent asked for input without a task");
        return { type: "interrupt", task: reply.task, agentCardUrl: node.agentCardUrl, ...(decision.subkind ? { subkind: decision.subkind } : {}) };
      case "wait":
        return failed(node.id, "internal: a waiting peer task has no outcome");
    }
  }

  /** Runs `call`, retrying retryable PeerCallErrors with backoff (domain/retry-policy); non-retryable ones and exhaustion throw. */
  private async retrying<T>(what: string, call: () => Promise<T>, signal: AbortSignal, log: Logger): Promise<T> {
    const policy: RetryPolicy = { baseMs: this.settings.retryBaseMs, maxMs: this.settings.retryMaxMs, maxAttempts: this.settings.maxAttempts, jitter: PEER_JITTER };
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (signal.aborted || !(err instanceof PeerCallError)) throw err;
        const decision = decideRetry(policy, err, attempt);
        if (!decision.retry && decision.reason === "not-retryable") throw new PeerCallError(`${what}: ${err.message}`, err.kind, false, err.rpcCode);
        if (!decision.retry) throw new PeerCallError(`${what} failed ${attempt} times; last error: ${err.message}`, err.kind, false, err.rpcCode);
        const delay = decision.delayMs;
        log.warn({ attempt, delayMs: delay, err: { kind: err.kind, message: err.message } }, `${what} failed; retrying`);
        await abortableSleep(delay, signal);
      }
    }
  }

  private now(): string {
    return this.clock().toISOString();
  }
}
