import type { Logger } from "../../../observability/logger.js";
import type { A2APeerClient, PeerTarget } from "../../../peer/a2a-peer-client.js";
import { PeerCallError } from "../../../peer/peer-http-client.js";
import type { A2AInvokeSettings } from "../../../peer/peer-settings.js";
import type { PeerTask } from "../../../peer/peer-types.js";
import { abortableSleep } from "../../../domain/abortable-sleep.js";
import type { PeerNewsWatch } from "./a2a-invoke-news.js";
import { foldPeerEvent, isInterruptedPeerState, isTerminalPeerState, type PeerProgress } from "./a2a-invoke.js";

// How an a2a.invoke node waits for its peer's task: news on the node's watch (a stream event, a push, another
// instance's commit, or the backstop poll's timeout), and the held stream that feeds that watch.

/** What the wait loop knows of the held stream: whether one should run, and whether it gave up. */
export interface StreamHold {
  controller: AbortController;
  started?: boolean;
  dead: boolean;
}

/**
 * Waits for news of the peer task until `ms` pass. Answers the task to project when news carried it (a stream
 * snapshot, a signed push with the whole task); no task means "read it now" (GetTask): the backstop poll, an
 * unsigned push (a hint: its claim is never projected), or news that says the state changed without its content
 * (our own hosts' pushes are content-free). `progress` follows what the callback receiver committed (so the
 * next record does not count it again).
 */
export async function awaitPeerNews(
  r: { signal: AbortSignal; stored?(): Promise<PeerProgress | undefined> },
  watch: PeerNewsWatch,
  progress: PeerProgress,
  ms: number,
  clock: () => Date,
): Promise<{ progress: PeerProgress; task?: PeerTask }> {
  const until = clock().getTime() + ms;
  for (;;) {
    const news = await watch.next(until - clock().getTime(), r.signal);
    if (news === "aborted") throw new PeerCallError("the run stopped", "aborted", false);
    if (news === "timeout") return { progress };
    switch (news.kind) {
      case "stream":
        if (news.task.id === progress.peerTaskId) return { progress, task: news.task };
        continue;
      case "push": {
        const seen = { ...progress, pushedAt: news.pushedAt };
        if (news.task?.id === progress.peerTaskId) return { progress: seen, task: news.task };
        // A push of a state whose content we do not need (still working) changes nothing here.
        if (!isTerminalPeerState(news.state) && !isInterruptedPeerState(news.state)) {
          progress = seen;
          continue;
        }
        return { progress: seen };
      }
      case "fetch":
        return { progress };
      case "remote": {
        // Another instance committed to our task: a pushed state it received, or nothing for us.
        const stored = await r.stored?.();
        if (
          !stored ||
          stored.key !== progress.key ||
          stored.pushedAt === undefined ||
          stored.pushedAt === progress.pushedAt
        )
          continue;
        return { progress: { ...progress, pushedAt: stored.pushedAt } };
      }
    }
  }
}

/**
 * Holds the peer task's stream (SubscribeToTask / tasks/resubscribe on the recorded wire) while the node waits,
 * folding each event into the task and posting it to the node. Re-attaches after the peer closes it or the
 * connection breaks (with backoff); a peer that refuses the stream three times in a row is given up on
 * (`hold.dead`: the node polls at A2A_PEER_POLL_MS again).
 */
export async function holdPeerStream(
  client: A2APeerClient,
  target: PeerTarget,
  initial: PeerTask,
  { watch, hold, log, settings }: { watch: PeerNewsWatch; hold: StreamHold; log: Logger; settings: A2AInvokeSettings },
): Promise<void> {
  const signal = hold.controller.signal;
  let current = initial;
  let refusals = 0;
  let breaks = 0;
  while (!signal.aborted) {
    const events = client.subscribe?.(target, current.id, signal);
    if (!events) {
      hold.dead = true;
      watch.post({ kind: "fetch" });
      return;
    }
    try {
      for await (const event of events) {
        breaks = 0;
        refusals = 0;
        current = foldPeerEvent(current, event);
        watch.post({ kind: "stream", task: current });
      }
      breaks++;
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof PeerCallError && !err.retryable) {
        // A terminal task is refused by 1.0 peers: read it instead. Anything else non-retryable counts toward giving up.
        refusals++;
        log.info(
          { peerTaskId: current.id, err: { kind: err.kind, message: err.message } },
          "the remote agent refused the task stream; reading the task instead",
        );
        watch.post({ kind: "fetch" });
        if (refusals >= 3) {
          hold.dead = true;
          return;
        }
      } else {
        breaks++;
        log.info(
          {
            peerTaskId: current.id,
            err: err instanceof PeerCallError ? { kind: err.kind, message: err.message } : String(err),
          },
          "the task stream broke; re-attaching",
        );
      }
    }
    if (isTerminalPeerState(current.state)) return;
    const delay = Math.min(
      settings.retryBaseMs * 2 ** Math.max(0, Math.max(breaks, refusals) - 1),
      settings.retryMaxMs,
    );
    await abortableSleep(delay, signal).catch(() => undefined);
  }
}
