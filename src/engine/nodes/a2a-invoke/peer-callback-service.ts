import type { Logger } from "../../../observability/logger.js";
import type { PeerCallbackKey } from "../../../peer/peer-callbacks.js";
import type { PeerJwks } from "../../../peer/peer-jwks.js";
import type { PeerConfig } from "../../../peer/peer-config.js";
import { PeerCallError } from "../../../peer/peer-http-client.js";
import { decodePeerPush } from "../../../peer/peer-push-body.js";
import { PeerPushTrust } from "../../../peer/peer-push-trust.js";
import type { PeerVersions } from "../../../peer/peer-version.js";
import type { TaskReadPort } from "../../../store/task-read-port.js";
import {
  isInterruptedPeerState,
  isNewPeerStatus,
  isTerminalPeerState,
  peerProgressOf,
  type PeerProgress,
} from "./a2a-invoke.js";
import type { PeerNewsBoard } from "./a2a-invoke-news.js";
import type { NodeProgressPort } from "../node-executor.js";
import { idempotencyKeyOf } from "../../workflow-walk.js";

/** One push as the route hands it over: our task id from the path, the headers (lower-case names), the raw body. */
export interface PeerCallbackRequest {
  taskId: string;
  headers: Readonly<Record<string, string | undefined>>;
  body: string;
}

export interface PeerCallbackAnswer {
  status: 200 | 400 | 401 | 503;
  /** What happened, for the peer (never a secret, never our task's content). */
  outcome: "committed" | "woken" | "duplicate" | "moved-on" | "ignored" | "unauthenticated" | "invalid" | "not-ready";
  retryAfterSeconds?: number;
}

/** How many past visits of each node a late push is recognised for (each costs one HMAC). */
const MAX_PAST_VISITS = 20;

const answer = (status: PeerCallbackAnswer["status"], outcome: PeerCallbackAnswer["outcome"]): PeerCallbackAnswer => ({
  status,
  outcome,
});

/** One answer for an unknown task and a missing or wrong token, so the answer says nothing of which tasks exist. */
const UNAUTHENTICATED = answer(401, "unauthenticated");

/**
 * The receiver of peers' pushes (`POST /v1/peer-callbacks/{taskId}`). The per-visit token (peer-callbacks.ts)
 * says who may wake us; the body is the peer's word only when it is signed with a key configured for that peer
 * (peer-push-trust.ts: its `signingKey`, or a JWT verified with its `jwksUrl` or pinned `jwks`). Then:
 *
 *   - signed: the pushed state is committed as the node's progress under the task's lock with the version check
 *     (so a push delivered twice, or to two instances at once, is committed once), and only then answered 2xx;
 *     a pushed whole task spares the lease holder a GetTask.
 *   - unsigned (the peer has no key configured): a hint. Nothing of the body is committed: the waiting node is
 *     woken and reads the peer's task (one GetTask, our credentials) and commits what the PEER says. On this
 *     instance through the news board; when the node waits on another instance, a wake mark (`pushedAt`, no
 *     state) is committed for the commit feed to carry. Claims that would not move the run (still working, a
 *     status we already hold) wake nothing.
 *
 *   A replayed signed push is a duplicate: its state is not newer than the one committed, and this instance
 *   remembers the signatures it committed for their tolerance (peer-push-trust.ts).
 *
 *   unknown task, no or wrong token, bad signature → 401 (the same answer: no existence oracle);
 *   not a body we can read → 400; the visit's progress not committed yet (the push raced the send's answer) →
 *   503 + Retry-After (the peer retries); same or older state, a run that moved on → 200 without a commit.
 */
export class PeerCallbackService {
  private readonly trust: PeerPushTrust;

  constructor(
    private readonly options: {
      progress: NodeProgressPort;
      reads: Pick<TaskReadPort, "find" | "contextOf">;
      key: PeerCallbackKey;
      peers: ReadonlyMap<string, PeerConfig>;
      /** The peers' key sets for JWT-signed pushes (the same ones the peer client checks cards with). */
      jwks: PeerJwks;
      news: PeerNewsBoard;
      /** The client half of each A2A version: the one whose shape a pushed body has reads it. */
      versions: PeerVersions;
      logger: Logger;
      clock?: () => Date;
    },
  ) {
    this.trust = new PeerPushTrust(options.peers, options.jwks, () => Math.floor(this.now().getTime() / 1000));
  }

  async receive(req: PeerCallbackRequest): Promise<PeerCallbackAnswer> {
    const { reads, key, logger } = this.options;
    const { taskId } = req;
    const token = tokenOf(req.headers);
    if (!token) return UNAUTHENTICATED;
    const record = await reads.find(taskId);
    if (!record) {
      logger.warn({ taskId }, "peer callback refused: no such task");
      return UNAUTHENTICATED;
    }
    const context = reads.contextOf(record);
    // The visit whose token this is: one that registered a callback, or the current one (its progress may not be committed yet).
    const visits = Object.entries(context.nodeProgress ?? {}).flatMap(([nodeId, raw]) => {
      const p = raw as Partial<PeerProgress> | undefined;
      return p && p.notify === "push" && typeof p.key === "string" && typeof p.peerTaskId === "string"
        ? [{ nodeId, progress: p as PeerProgress }]
        : [];
    });
    const visit = visits.find((v) => key.matches(taskId, v.progress.key, token));
    if (!visit) {
      const current = context.cursor;
      if (current !== null && context.nodeStarted && key.matches(taskId, idempotencyKeyOf(context, current), token)) {
        return { status: 503, outcome: "not-ready", retryAfterSeconds: 1 };
      }
      // A late push for a visit that is over (its progress is gone): acknowledged, nothing to commit.
      const past = Object.entries(context.visits ?? {}).some(([nodeId, count]) => {
        for (let v = Math.max(1, count - MAX_PAST_VISITS + 1); v <= count; v++)
          if (key.matches(taskId, `${taskId}:${nodeId}:${v}`, token)) return true;
        return false;
      });
      if (past) return answer(200, "moved-on");
      logger.warn({ taskId }, "peer callback refused: the token does not match");
      return UNAUTHENTICATED;
    }
    const log = logger.child({
      taskId,
      nodeId: visit.nodeId,
      peerTaskId: visit.progress.peerTaskId,
      ...(visit.progress.peer !== undefined ? { peer: visit.progress.peer } : {}),
    });
    const trust = await this.trust.check(visit.progress.peer, req);
    if (trust.verdict === "refused") {
      log.warn({ why: trust.why }, "peer callback refused: not signed with the peer's key");
      return UNAUTHENTICATED;
    }
    let event;
    try {
      event = decodePeerPush(req.body, this.options.versions);
    } catch (err) {
      log.warn(
        { err: err instanceof PeerCallError ? err.message : String(err) },
        "peer callback refused: not a push body we can read",
      );
      return answer(400, "invalid");
    }
    if (!event || event.kind === "artifact") return answer(200, "ignored"); // artifacts come with the task when it is read
    const pushed =
      event.kind === "task"
        ? {
            taskId: event.task.id,
            state: event.task.state,
            timestamp: event.task.statusTimestamp,
            messageId: event.task.statusMessage?.messageId,
            task: event.task,
          }
        : {
            taskId: event.taskId,
            state: event.state,
            timestamp: event.statusTimestamp,
            messageId: event.statusMessage?.messageId,
            task: undefined,
          };
    if (pushed.taskId !== visit.progress.peerTaskId) {
      log.warn({ pushedTaskId: pushed.taskId }, "peer callback refused: it names another remote task");
      return answer(400, "invalid");
    }
    const claim = { state: pushed.state, ...(pushed.timestamp ? { timestamp: pushed.timestamp } : {}) };
    if (trust.verdict === "unsigned") return this.wake(taskId, visit, claim, log);
    if (this.trust.isReplay(trust.proof)) return answer(200, "duplicate");
    const at = this.now().toISOString();
    const outcome = await this.options.progress.commitNodeProgress(taskId, (ctx, running) => {
      if (!running(visit.nodeId)) return { answer: "moved-on" as const };
      const stored = peerProgressOf(ctx, visit.nodeId, visit.progress.key);
      if (!stored) return { answer: "moved-on" as const };
      if (!isNewPeerStatus(stored, claim)) return { answer: "duplicate" as const };
      const { peerStatusAt: _old, ...rest } = stored;
      const progress: PeerProgress = {
        ...rest,
        peerState: pushed.state,
        peerStatus: `${pushed.state}|${pushed.messageId ?? pushed.timestamp ?? ""}`,
        ...(pushed.timestamp ? { peerStatusAt: pushed.timestamp } : {}),
        pushedAt: at,
      };
      return {
        commit: { nodeId: visit.nodeId, progress: progress as unknown as Record<string, unknown> },
        answer: "committed" as const,
      };
    });
    if (outcome === "committed") {
      this.trust.remember(trust.proof);
      log.info({ peerState: pushed.state, signedBy: trust.by }, "peer pushed a new state (signed); committed");
      // A signed push that carries the whole task (0.3 SDKs send the Task) spares the lease holder a GetTask.
      this.options.news.post(taskId, {
        kind: "push",
        state: pushed.state,
        pushedAt: at,
        ...(pushed.task ? { task: pushed.task } : {}),
      });
    }
    return answer(200, outcome);
  }

  /**
   * An unsigned push: only a hint that the peer's task changed. Its claim is checked against the progress we
   * hold (read from the peer or from a signed push, never from a hint): one the run would not act on wakes
   * nothing; else the waiting node is woken to read the peer's task. The claim itself is never committed.
   */
  private async wake(
    taskId: string,
    visit: { nodeId: string; progress: PeerProgress },
    claim: { state: string; timestamp?: string },
    log: Logger,
  ): Promise<PeerCallbackAnswer> {
    if (!isNewPeerStatus(visit.progress, claim)) return answer(200, "duplicate");
    if (!isTerminalPeerState(claim.state) && !isInterruptedPeerState(claim.state)) return answer(200, "ignored");
    const at = this.now().toISOString();
    if (this.options.news.post(taskId, { kind: "push", state: claim.state, pushedAt: at })) {
      log.info({ claimedState: claim.state }, "peer push (unsigned) woke the node; it reads the remote task");
      return answer(200, "woken");
    }
    // The node waits on another instance (or on none): a wake mark for the commit feed, no peer state.
    const outcome = await this.options.progress.commitNodeProgress(taskId, (ctx, running) => {
      const stored = running(visit.nodeId) ? peerProgressOf(ctx, visit.nodeId, visit.progress.key) : undefined;
      if (!stored) return { answer: "moved-on" as const };
      return {
        commit: { nodeId: visit.nodeId, progress: { ...stored, pushedAt: at } as unknown as Record<string, unknown> },
        answer: "woken" as const,
      };
    });
    if (outcome === "woken")
      log.info(
        { claimedState: claim.state },
        "peer push (unsigned) marked for the node's instance; it reads the remote task",
      );
    return answer(200, outcome);
  }

  private now(): Date {
    return this.options.clock?.() ?? new Date();
  }
}

/**
 * `X-A2A-Notification-Token` (0.3, our own hosts, and every peer that signs its pushes: its Authorization is the
 * JWT), else `Authorization: Bearer …` (a static-bearer peer's 1.0 config authentication, the token itself).
 */
function tokenOf(headers: Readonly<Record<string, string | undefined>>): string | undefined {
  const token = headers["x-a2a-notification-token"];
  if (token) return token;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers["authorization"] ?? "");
  return bearer?.[1];
}
