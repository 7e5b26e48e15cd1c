import type { Logger } from "../observability/logger.js";
import { verifyPeerSignature, type PeerCallbackKey } from "../peer/peer-callbacks.js";
import type { PeerConfig } from "../peer/peer-config.js";
import { PeerCallError } from "../peer/peer-http-client.js";
import { decodePeerPush } from "../peer/peer-push-body.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import { isNewPeerStatus, peerProgressOf, type PeerProgress } from "./nodes/a2a-invoke.js";
import type { PeerNewsBoard } from "./nodes/a2a-invoke-news.js";
import type { TaskSupervisor } from "./task-supervisor.js";
import { idempotencyKeyOf } from "./workflow-engine.js";

/** One push as the route hands it over: our task id from the path, the headers (lower-case names), the raw body. */
export interface PeerCallbackRequest {
  taskId: string;
  headers: Readonly<Record<string, string | undefined>>;
  body: string;
}

export interface PeerCallbackAnswer {
  status: 200 | 400 | 401 | 404 | 503;
  /** What happened, for the peer (never a secret, never our task's content). */
  outcome: "committed" | "duplicate" | "moved-on" | "ignored" | "unauthenticated" | "not-found" | "invalid" | "not-ready";
  retryAfterSeconds?: number;
}

/** How many past visits of each node a late push is recognised for (each costs one HMAC). */
const MAX_PAST_VISITS = 20;

const answer = (status: PeerCallbackAnswer["status"], outcome: PeerCallbackAnswer["outcome"]): PeerCallbackAnswer => ({ status, outcome });

/**
 * The receiver of peers' pushes (`POST /v1/peer-callbacks/{taskId}`): authenticates the push with the per-visit
 * token (peer-callbacks.ts) and, when the peer is configured with a signing key, its X-OpenWOP-Signature; then
 * commits the pushed peer state as the node's progress under the task's lock with the version check (so a push
 * delivered twice, or to two instances at once, is committed once: the second sees the state already recorded),
 * and only then answers 2xx. The instance holding the task's lease acts on it: on this instance through the news
 * board, on another through the commit feed. A forged push commits nothing and moves no run.
 *
 *   unknown task → 404; no or wrong token, bad signature → 401; not a body we can read → 400;
 *   the visit's progress not committed yet (the push raced the send's answer) → 503 + Retry-After (the peer retries);
 *   same or older state, a run that moved on → 200 without a commit.
 */
export class PeerCallbackService {
  constructor(
    private readonly options: {
      supervisor: Pick<TaskSupervisor, "commitPeerProgress">;
      reads: Pick<TaskReadPort, "find" | "contextOf">;
      key: PeerCallbackKey;
      peers: ReadonlyMap<string, PeerConfig>;
      news: PeerNewsBoard;
      logger: Logger;
      clock?: () => Date;
    },
  ) {}

  async receive(req: PeerCallbackRequest): Promise<PeerCallbackAnswer> {
    const { reads, key, logger } = this.options;
    const { taskId } = req;
    const record = await reads.find(taskId);
    if (!record) return answer(404, "not-found");
    const token = tokenOf(req.headers);
    if (!token) return answer(401, "unauthenticated");
    const context = reads.contextOf(record);
    // The visit whose token this is: one that registered a callback, or the current one (its progress may not be committed yet).
    const visits = Object.entries(context.nodeProgress ?? {}).flatMap(([nodeId, raw]) => {
      const p = raw as Partial<PeerProgress> | undefined;
      return p && p.notify === "push" && typeof p.key === "string" && typeof p.peerTaskId === "string" ? [{ nodeId, progress: p as PeerProgress }] : [];
    });
    const visit = visits.find((v) => key.matches(taskId, v.progress.key, token));
    if (!visit) {
      const current = context.cursor;
      if (current !== null && context.nodeStarted && key.matches(taskId, idempotencyKeyOf(context, current), token)) {
        return { status: 503, outcome: "not-ready", retryAfterSeconds: 1 };
      }
      // A late push for a visit that is over (its progress is gone): acknowledged, nothing to commit.
      const past = Object.entries(context.visits ?? {}).some(([nodeId, count]) => {
        for (let v = Math.max(1, count - MAX_PAST_VISITS + 1); v <= count; v++) if (key.matches(taskId, `${taskId}:${nodeId}:${v}`, token)) return true;
        return false;
      });
      if (past) return answer(200, "moved-on");
      logger.warn({ taskId }, "peer callback refused: the token does not match");
      return answer(401, "unauthenticated");
    }
    const log = logger.child({ taskId, nodeId: visit.nodeId, peerTaskId: visit.progress.peerTaskId, ...(visit.progress.peer !== undefined ? { peer: visit.progress.peer } : {}) });
    const signingKey = visit.progress.peer !== undefined ? this.options.peers.get(visit.progress.peer)?.signingKey : undefined;
    if (signingKey && !verifyPeerSignature({ key: signingKey.reveal(), body: req.body, timestamp: req.headers["x-openwop-timestamp"], signature: req.headers["x-openwop-signature"] })) {
      log.warn("peer callback refused: the signature is missing or wrong");
      return answer(401, "unauthenticated");
    }
    let event;
    try {
      event = decodePeerPush(req.body);
    } catch (err) {
      log.warn({ err: err instanceof PeerCallError ? err.message : String(err) }, "peer callback refused: not a push body we can read");
      return answer(400, "invalid");
    }
    if (!event || event.kind === "artifact") return answer(200, "ignored"); // artifacts come with the task when it is read
    const pushed =
      event.kind === "task"
        ? { taskId: event.task.id, state: event.task.state, timestamp: event.task.statusTimestamp, messageId: event.task.statusMessage?.messageId, task: event.task }
        : { taskId: event.taskId, state: event.state, timestamp: event.statusTimestamp, messageId: event.statusMessage?.messageId, task: undefined };
    if (pushed.taskId !== visit.progress.peerTaskId) {
      log.warn({ pushedTaskId: pushed.taskId }, "peer callback refused: it names another remote task");
      return answer(400, "invalid");
    }
    const at = (this.options.clock?.() ?? new Date()).toISOString();
    const outcome = await this.options.supervisor.commitPeerProgress(taskId, (ctx, running) => {
      if (!running(visit.nodeId)) return { answer: "moved-on" as const };
      const stored = peerProgressOf(ctx, visit.nodeId, visit.progress.key);
      if (!stored) return { answer: "moved-on" as const };
      if (!isNewPeerStatus(stored, { state: pushed.state, ...(pushed.timestamp ? { timestamp: pushed.timestamp } : {}) })) return { answer: "duplicate" as const };
      const { peerStatusAt: _old, ...rest } = stored;
      const progress: PeerProgress = {
        ...rest,
        peerState: pushed.state,
        peerStatus: `${pushed.state}|${pushed.messageId ?? pushed.timestamp ?? ""}`,
        ...(pushed.timestamp ? { peerStatusAt: pushed.timestamp } : {}),
        pushedAt: at,
      };
      return { commit: { nodeId: visit.nodeId, progress: progress as unknown as Record<string, unknown> }, answer: "committed" as const };
    });
    if (outcome === "committed") {
      log.info({ peerState: pushed.state }, "peer pushed a new state; committed");
      // A push that carries the whole task (0.3 SDKs send the Task) spares the lease holder a GetTask.
      this.options.news.post(taskId, { kind: "push", state: pushed.state, pushedAt: at, ...(pushed.task ? { task: pushed.task } : {}) });
    }
    return answer(200, outcome);
  }
}

/** `X-A2A-Notification-Token` (0.3 and our own hosts), else `Authorization: Bearer …` (a 1.0 config's authentication). */
function tokenOf(headers: Readonly<Record<string, string | undefined>>): string | undefined {
  const token = headers["x-a2a-notification-token"];
  if (token) return token;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers["authorization"] ?? "");
  return bearer?.[1];
}
