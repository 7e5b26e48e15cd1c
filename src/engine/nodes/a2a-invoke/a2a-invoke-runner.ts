import type { Artifact } from "../../../domain/a2a-types.js";
import { decideRetry, type RetryPolicy } from "../../../domain/retry-policy.js";
import type { RunError, TaskContext } from "../../../machine/task-context.js";
import type { Logger } from "../../../observability/logger.js";
import type { A2APeerClient, PeerCapabilities, PeerTarget } from "../../../peer/a2a-peer-client.js";
import { PeerVersionRefused, shownEndpoint } from "../../../peer/peer-endpoint.js";
import { PeerCallError } from "../../../peer/peer-http-client.js";
import { outboundNegotiation, type NegotiationDecided } from "../../../domain/negotiation.js";
import type { A2AInvokeSettings } from "../../../peer/peer-settings.js";
import type { PeerPushRequest, PeerTask } from "../../../peer/peer-types.js";
import { peerCallbackUrl, type PeerCallbackKey } from "../../../peer/peer-callbacks.js";
import type { PeerConfig } from "../../../peer/peer-config.js";
import { pushAuthOf } from "../../../peer/peer-push-auth.js";
import { PeerNewsBoard, type PeerNewsWatch } from "./a2a-invoke-news.js";
import { awaitPeerNews, holdPeerStream, type StreamHold } from "./a2a-invoke-waits.js";
import { tracedPeerMessage } from "./peer-trace.js";
import type { CommitBus } from "../../../store/commit-bus.js";
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
import { unexpandedVariables } from "../../../workflows/workflow-variables.js";
import { idempotencyKeyOf, runInputOf } from "../../workflow-walk.js";
import type { A2AInvokeNode } from "../../../workflows/workflow-types.js";
import { abortableSleep } from "../../../domain/abortable-sleep.js";

/** Peer calls retry transport errors with ±20 % jitter around the exponential delay. */
const PEER_JITTER = { min: 0.8, max: 1.2 } as const;

export const DEFAULT_A2A_INVOKE_SETTINGS: A2AInvokeSettings = {
  pollMs: 1_000,
  timeoutMs: 10 * 60 * 1000,
  maxAttempts: 5,
  retryBaseMs: 500,
  retryMaxMs: 10_000,
  requestTimeoutMs: 15_000,
  push: true,
  streaming: true,
  backstopPollMs: 60_000,
  streamIdleMs: 60_000,
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
  /**
   * Commits a `NODE_PROGRESS` (with the version negotiation it follows, logged as negotiation.decided); false when
   * the run no longer runs this node (then nothing more may be committed).
   */
  record(progress: PeerProgress, negotiation?: NegotiationDecided): Promise<boolean>;
  /** Logs a negotiation that records no progress (the peer offers no version we may call), before the node fails. */
  negotiated?(negotiation: NegotiationDecided): Promise<boolean>;
  /**
   * The node's progress as stored now (another instance's callback receiver may have committed a pushed state):
   * drops this instance's cached copy of the task first, so the next commit is checked against the store.
   */
  stored?(): Promise<PeerProgress | undefined>;
}

/** Where peers push to: this host's public base URL and the key the per-task tokens derive from. */
export interface PeerCallbackSettings {
  baseUrl: string;
  key: PeerCallbackKey;
  /** The named peers: how each authenticates its pushes decides how our callback is registered with it. */
  peers: ReadonlyMap<string, PeerConfig>;
}

/** What the runner is completed with at construction (core.ts hands both in through the kind's host services). */
export interface A2AInvokeRunnerWiring {
  /** Push on (when the settings allow it): the callback URL's base and the token key; none: stream or poll only. */
  callbacks?: PeerCallbackSettings | undefined;
  /** The commit bus: another instance's commit to a waiting node's task wakes it (change stream only). */
  commits?: Pick<CommitBus, "onRemote" | "remotePushed"> | undefined;
  clock?: () => Date;
}

/** The call target a recorded progress names (endpoint, peer name, API key header name: never a credential). */
function targetOf(progress: PeerProgress): PeerTarget {
  return {
    endpoint: progress.endpoint,
    ...(progress.peer !== undefined ? { peer: progress.peer } : {}),
    ...(progress.apiKeyHeader !== undefined ? { apiKeyHeader: progress.apiKeyHeader } : {}),
  };
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
  /** Pushes committed here and stream events wake the waiting nodes through it (the receiver posts to it). */
  readonly news: PeerNewsBoard;
  private readonly callbacks: PeerCallbackSettings | undefined;
  private readonly clock: () => Date;

  constructor(
    private readonly client: A2APeerClient | undefined,
    private readonly settings: A2AInvokeSettings,
    private readonly logger: Logger,
    wiring: A2AInvokeRunnerWiring = {},
  ) {
    this.news = new PeerNewsBoard(wiring.commits);
    this.callbacks = wiring.callbacks;
    this.clock = wiring.clock ?? (() => new Date());
  }

  /**
   * The push config to register with a send: only when the card offers push and this host can receive it. A peer
   * that signs its pushes (keys configured) gets no static credentials, so that it signs a JWT; one that can only
   * send static credentials gets the token as its Bearer credentials too (peer-push-auth.ts).
   */
  private pushRequestFor(
    taskId: string,
    key: string,
    capabilities: PeerCapabilities | undefined,
    peerName: string | undefined,
  ): PeerPushRequest | undefined {
    if (!this.settings.push || !this.callbacks || !capabilities?.push) return undefined;
    const token = this.callbacks.key.tokenFor(taskId, key);
    const peer = peerName !== undefined ? this.callbacks.peers.get(peerName) : undefined;
    return {
      url: peerCallbackUrl(this.callbacks.baseUrl, taskId),
      token,
      ...(pushAuthOf(peer) === "static-bearer" ? { credentials: token } : {}),
    };
  }

  async run(r: InvokeRun): Promise<InvokeOutcome> {
    // Watching from before the send: a push that lands before the progress is committed is answered 503 and
    // retried by the peer, so nothing is lost, but news from the stream or another instance may come early.
    const watch = this.news.watch(r.taskId);
    const hold: StreamHold = { controller: new AbortController(), dead: false };
    try {
      return await this.invoke(r, watch, hold);
    } finally {
      hold.controller.abort();
      watch.close();
    }
  }

  private async invoke(r: InvokeRun, watch: PeerNewsWatch, hold: StreamHold): Promise<InvokeOutcome> {
    const { node, context, signal } = r;
    const unset = unexpandedVariables(node.agentCardUrl);
    if (unset.length > 0) {
      return failed(
        node.id,
        `the remote agent is not configured: agentCardUrl "${node.agentCardUrl}" needs ${unset.join(", ")}, which is not set`,
      );
    }
    const client = this.client;
    if (!client) return failed(node.id, "this host has no A2A client configured");
    const key = idempotencyKeyOf(context, node.id);
    const log = this.logger.child({ taskId: r.taskId, nodeId: node.id });
    let progress = peerProgressOf(context, node.id, key);
    try {
      let task: PeerTask;
      if (!progress) {
        const ref = { agentCardUrl: node.agentCardUrl, ...(node.peer !== undefined ? { peer: node.peer } : {}) };
        // A refusal (no version in common) is logged before the node fails with it; it is never retried.
        const discovered = await this.retrying(
          "reading the agent card",
          () =>
            client.discover(ref, signal).catch(async (err: unknown) => {
              if (err instanceof PeerVersionRefused)
                await r.negotiated?.(outboundNegotiation(node.agentCardUrl, err.requested, null));
              throw err;
            }),
          signal,
          log,
        );
        const { capabilities, negotiation: versions, ...target } = discovered;
        const negotiation = versions && outboundNegotiation(node.agentCardUrl, versions.requested, versions.negotiated);
        const messageId = peerMessageId(`${key}:send`);
        const message = tracedPeerMessage(initialPeerMessage(node, runInputOf(context), messageId), context);
        const push = this.pushRequestFor(r.taskId, key, capabilities, node.peer);
        // The send is not abandoned on cancel or shutdown (only on its own deadline): once the peer has
        // answered we must learn its task id, to record it or to cancel it.
        let pushed = push !== undefined;
        let reply;
        try {
          reply = await this.retrying(
            "sending the message",
            () => client.send(target, message, undefined, push),
            signal,
            log,
          );
        } catch (err) {
          // A peer that refuses our callback (its egress guard, no push after all) is asked again without it;
          // the same message id makes the resend safe. Credentials refused or transport trouble are not retried here.
          if (!push || !(err instanceof PeerCallError) || err.retryable || (err.kind !== "rpc" && err.kind !== "http"))
            throw err;
          log.warn(
            { err: { kind: err.kind, message: err.message } },
            "the remote agent refused our push callback; sending without it",
          );
          pushed = false;
          reply = await this.retrying("sending the message", () => client.send(target, message), signal, log);
        }
        if (reply.kind === "message") {
          // No progress to carry it: the negotiation is logged on its own.
          if (negotiation && !(await r.negotiated?.(negotiation)) && r.negotiated) return { type: "stopped" };
          return this.outcome(projectPeerMessage(node.agentCardUrl, reply.message), node, reply);
        }
        task = reply.task;
        const notify = pushed
          ? "push"
          : this.settings.streaming &&
              capabilities?.streaming &&
              client.subscribe &&
              client.canStream?.(target) !== false
            ? "stream"
            : "poll";
        progress = {
          ...firstProgress({ key, agentCardUrl: node.agentCardUrl, ...target, messageId, at: this.now(), task }),
          notify,
        };
        if (task.statusTimestamp) progress.peerStatusAt = task.statusTimestamp;
        log.info(
          { peerTaskId: task.id, peerState: task.state, endpoint: shownEndpoint(target.endpoint), notify },
          "remote agent accepted the message",
        );
        if (!(await r.record(progress, negotiation))) {
          if (!isTerminalPeerState(task.state))
            await this.cancelPeer(progress, "the run stopped while the message was in flight");
          return { type: "stopped" };
        }
        if (signal.aborted) return { type: "stopped" };
      } else {
        const recorded = progress;
        task = await this.retrying(
          "reading the remote task",
          () => client.getTask(targetOf(recorded), recorded.peerTaskId, signal),
          signal,
          log,
        );
      }

      if (progress.pendingReply) {
        const pending = progress.pendingReply;
        // Delivered exactly once: not if the peer's history already holds it (sent before a restart), and not
        // if the peer has moved on (it no longer waits for an answer).
        const delivered = task.history.some((m) => m.messageId === pending.messageId);
        if (!delivered && isInterruptedPeerState(task.state)) {
          const reply = tracedPeerMessage(
            {
              messageId: pending.messageId,
              role: "user",
              parts: pending.parts,
              taskId: progress.peerTaskId,
              contextId: progress.peerContextId,
            },
            context,
          );
          const target = targetOf(progress);
          const answer = await this.retrying("forwarding the reply", () => client.send(target, reply), signal, log);
          if (answer.kind === "task") task = answer.task;
          log.info({ peerTaskId: progress.peerTaskId }, "forwarded the caller's reply to the remote agent");
        } else if (!delivered) {
          log.warn(
            { peerTaskId: progress.peerTaskId, peerState: task.state },
            "the remote task no longer waits for input; the caller's reply was not forwarded",
          );
        }
        const { pendingReply: _sent, ...rest } = progress;
        progress = { ...withPeerStatus(rest, task), sentMessageId: pending.messageId, sentAt: this.now() };
        if (!(await r.record(progress))) return { type: "stopped" };
      }

      for (;;) {
        const decision = projectPeerTask(node, progress.agentCardUrl, task, progress);
        if (peerStatusChanged(progress, task)) {
          if (decision.type === "wait" && decision.unknownState !== undefined) {
            log.warn(
              { peerTaskId: task.id, peerState: decision.unknownState },
              "the remote task is in an unknown state; still waiting",
            );
          }
          progress = withPeerStatus(progress, task);
          if (!(await r.record(progress))) return { type: "stopped" };
        }
        if (decision.type !== "wait") return this.outcome(decision, node, { kind: "task", task });
        const timeoutMs = node.timeoutMs ?? this.settings.timeoutMs;
        const left = timeoutMs - (this.clock().getTime() - Date.parse(progress.sentAt));
        if (left < 0) {
          await this.cancelPeer(progress, "the node timed out");
          return failed(
            node.id,
            `the remote agent did not finish within ${timeoutMs} ms (task ${task.id} is still ${task.state})`,
          );
        }
        if (progress.notify === "stream" && !hold.dead && !hold.started) {
          hold.started = true;
          void holdPeerStream(client, targetOf(progress), task, { watch, hold, log, settings: this.settings });
        }
        const news = progress.notify === "push" || (progress.notify === "stream" && !hold.dead);
        // With push or a stream, GetTask is the backstop only; the poll interval alone when nothing else tells us.
        const interval = news ? Math.max(this.settings.pollMs, this.settings.backstopPollMs) : this.settings.pollMs;
        const next = await awaitPeerNews(r, watch, progress, Math.min(interval, left + 1), this.clock);
        progress = next.progress;
        if (next.task) {
          task = next.task;
          continue;
        }
        const current = progress;
        task = await this.retrying(
          "reading the remote task",
          () => client.getTask(targetOf(current), current.peerTaskId, signal),
          signal,
          log,
        );
      }
    } catch (err) {
      if (signal.aborted) return { type: "stopped" };
      if (err instanceof PeerCallError) {
        log.warn({ err: { kind: err.kind, message: err.message } }, "a2a.invoke failed");
        const who =
          node.peer !== undefined
            ? `peer "${node.peer}" (${shownUrl(node.agentCardUrl)})`
            : `the remote agent at ${shownUrl(node.agentCardUrl)}`;
        return failed(node.id, `calling ${who} failed: ${err.message}`);
      }
      throw err;
    }
  }

  /** Best-effort `tasks/cancel` of a peer task (our run was cancelled or gave up). Never throws; logged. */
  async cancelPeer(progress: PeerProgress, why: string): Promise<void> {
    if (!this.client) return;
    const log = this.logger.child({
      peerTaskId: progress.peerTaskId,
      endpoint: shownEndpoint(progress.endpoint),
      ...(progress.peer !== undefined ? { peer: progress.peer } : {}),
    });
    try {
      const task = await this.client.cancelTask(
        targetOf(progress),
        progress.peerTaskId,
        AbortSignal.timeout(this.settings.requestTimeoutMs),
      );
      log.info({ peerState: task.state, why }, "cancelled the remote task");
    } catch (err) {
      log.warn(
        { err: err instanceof PeerCallError ? { kind: err.kind, message: err.message } : err, why },
        "could not cancel the remote task (best effort)",
      );
    }
  }

  private outcome(
    decision: ReturnType<typeof projectPeerTask>,
    node: A2AInvokeNode,
    reply: { kind: "task"; task: PeerTask } | { kind: "message" },
  ): InvokeOutcome {
    switch (decision.type) {
      case "complete":
        return { type: "complete", output: decision.output, artifacts: decision.artifacts };
      case "fail":
        return { type: "fail", error: decision.error };
      case "cancel":
        return { type: "cancel", agentCardUrl: shownUrl(node.agentCardUrl) };
      case "interrupt":
        if (reply.kind !== "task") return failed(node.id, "the remote agent asked for input without a task");
        return {
          type: "interrupt",
          task: reply.task,
          agentCardUrl: node.agentCardUrl,
          ...(decision.subkind ? { subkind: decision.subkind } : {}),
        };
      case "wait":
        return failed(node.id, "internal: a waiting peer task has no outcome");
    }
  }

  /** Runs `call`, retrying retryable PeerCallErrors with backoff (domain/retry-policy); non-retryable ones and exhaustion throw. */
  private async retrying<T>(what: string, call: () => Promise<T>, signal: AbortSignal, log: Logger): Promise<T> {
    const policy: RetryPolicy = {
      baseMs: this.settings.retryBaseMs,
      maxMs: this.settings.retryMaxMs,
      maxAttempts: this.settings.maxAttempts,
      jitter: PEER_JITTER,
    };
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (signal.aborted || !(err instanceof PeerCallError)) throw err;
        const decision = decideRetry(policy, err, attempt);
        if (!decision.retry && decision.reason === "not-retryable")
          throw new PeerCallError(`${what}: ${err.message}`, err.kind, false, err.rpcCode);
        if (!decision.retry)
          throw new PeerCallError(
            `${what} failed ${attempt} times; last error: ${err.message}`,
            err.kind,
            false,
            err.rpcCode,
          );
        const delay = decision.delayMs;
        log.warn(
          { attempt, delayMs: delay, err: { kind: err.kind, message: err.message } },
          `${what} failed; retrying`,
        );
        await abortableSleep(delay, signal);
      }
    }
  }

  private now(): string {
    return this.clock().toISOString();
  }
}
