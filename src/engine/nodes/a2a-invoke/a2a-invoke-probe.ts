/**
 * The OpenWOP invoke seam's engine half (`POST /v1/host/sample/a2a/invoke`, RFC 0148 §A / 0152 §B, §E;
 * domain/peer-invoke-seam.ts), offered through the kind's `seams` (a2a-invoke-node.ts): drives the `a2a.invoke`
 * node's own runner, over the host's own peer client (card discovery, version choice, egress
 * guard), in the context of one of our runs, and reports what happened on the wire. Nothing here is a second
 * client: the wrapper below only records which calls the runner made and hands every call to the host's client.
 *
 * What the seam may ask for:
 * - `requestVersion`: call the peer over this version only; one we do not speak fails at once.
 * - `peerOffersOnly`: take the peer to offer this version only; the card must offer it, else the call fails.
 * Either way a version the peer does not offer fails with `interop-version-unsupported`, never a quiet fallback
 * (RFC 0152 §B: no silent downgrade), and the answer names the version used beside the one we prefer.
 */
import { PREFERRED_A2A_VERSION } from "../../../domain/a2a-version.js";
import { DomainError, taskNotFound } from "../../../domain/errors.js";
import type { PeerInvokeReport, PeerInvokeRequest, PeerInvokeSeam } from "../../../domain/peer-invoke-seam.js";
import type { Logger } from "../../../observability/logger.js";
import type { A2APeerClient, PeerTarget } from "../../../peer/a2a-peer-client.js";
import { parsePeerEndpoint, peerVersionOf, PEER_VERSIONS, type PeerVersion } from "../../../peer/peer-endpoint.js";
import { PeerCallError } from "../../../peer/peer-http-client.js";
import type { A2AInvokeSettings } from "../../../peer/peer-settings.js";
import type { TaskReadPort } from "../../../store/task-read-port.js";
import type { A2AInvokeNode } from "../../../workflows/workflow-types.js";
import { isInterruptedPeerState, isTerminalPeerState, type PeerProgress } from "./a2a-invoke.js";
import { A2AInvokeRunner, type InvokeOutcome, type InvokeRun } from "./a2a-invoke-runner.js";

/** The node the seam runs: its id names it in the logs; the run's own nodes are not touched. */
export const SEAM_NODE_ID = "conformance-a2a-invoke";
/** How long the peer's task may take to reach a terminal or input state before the seam stops watching it. */
const SETTLE_MS = 1_500;
const SEAM_POLL_MS = 200;

/** A peer base URL becomes its well-known card URL; a URL with a path is taken as the card's. */
export function peerCardUrlOf(peerUrl: string): string {
  const url = new URL(peerUrl);
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/.well-known/agent-card.json";
  return url.href;
}

function unsupportedVersion(message: string, details: Record<string, unknown>): DomainError {
  return new DomainError("interop-version-unsupported", message, { ...details, supported: [...PEER_VERSIONS] });
}

/** The one version the request pins, if any; a version we do not speak, or two that disagree, is refused here. */
export function pinnedVersionOf(
  request: Pick<PeerInvokeRequest, "requestVersion" | "peerOffersOnly">,
): PeerVersion | undefined {
  const asked = (["requestVersion", "peerOffersOnly"] as const).flatMap((field) =>
    request[field] !== undefined ? [{ field, value: request[field] }] : [],
  );
  let pinned: PeerVersion | undefined;
  for (const { field, value } of asked) {
    const version = peerVersionOf(value);
    if (!version)
      throw unsupportedVersion(
        `this host does not speak A2A ${value} (${field}); it speaks ${PEER_VERSIONS.join(", ")}`,
        { requested: value, path: `body.${field}` },
      );
    if (pinned !== undefined && pinned !== version)
      throw unsupportedVersion(`the request asks for A2A ${pinned} but the peer offers only ${version}`, {
        requested: pinned,
        offered: version,
      });
    pinned = version;
  }
  return pinned;
}

/** A call the runner could not make, as the seam's error: the version ones are interop errors, the egress guard's a bad URL. */
function callError(err: PeerCallError, discovered: boolean): DomainError {
  if (!discovered && err.kind === "unsupported")
    return unsupportedVersion(`the peer offers no version this call may use: ${err.message}`, {});
  // The peer refused the version we called it over (A2A VersionNotSupported, -32009).
  if (err.rpcCode === -32009) return unsupportedVersion(`the peer refused the A2A version: ${err.message}`, {});
  if (err.kind === "egress") {
    // The suite's scripted peer listens on loopback: say which test-only setting lets the seam reach it.
    const hint =
      "a scripted peer on loopback needs A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS=true (test only; no other private address is ever allowed)";
    return new DomainError("invalid-params", `peerUrl: ${err.message}; ${hint}`, { path: "body.peerUrl" });
  }
  return new DomainError("external-call-failed", `calling the peer failed: ${err.message}`, { kind: err.kind });
}

export class PeerInvokeProbe implements PeerInvokeSeam {
  constructor(
    private readonly client: A2APeerClient,
    private readonly settings: A2AInvokeSettings,
    private readonly reads: Pick<TaskReadPort, "find" | "contextOf">,
    private readonly logger: Logger,
  ) {}

  check(request: PeerInvokeRequest): void {
    pinnedVersionOf(request);
  }

  /** Runs the a2a.invoke runner against the peer in the context of our run `taskId` (tenant `tenant`). */
  async invoke(request: PeerInvokeRequest, run: { taskId: string; tenant: string }): Promise<PeerInvokeReport> {
    const pin = pinnedVersionOf(request);
    const seen: { endpoint?: string; error?: PeerCallError; reads: string[] } = { reads: [] };
    const recorded = async <T>(call: () => Promise<T>): Promise<T> => {
      try {
        return await call();
      } catch (err) {
        if (err instanceof PeerCallError) seen.error = err;
        throw err;
      }
    };
    const host = this.client;
    const client: A2APeerClient = {
      discover: (ref, signal) =>
        recorded(async () => {
          const found = await host.discover({ ...ref, ...(pin ? { protocolVersion: pin } : {}) }, signal);
          seen.endpoint = found.endpoint;
          return found;
        }),
      send: (target, message, signal, push) => recorded(() => host.send(target, message, signal, push)),
      getTask: (target: PeerTarget, taskId, signal) => {
        seen.reads.push(taskId);
        return recorded(() => host.getTask(target, taskId, signal));
      },
      cancelTask: (target: PeerTarget, taskId, signal) => {
        seen.reads.push(taskId);
        return recorded(() => host.cancelTask(target, taskId, signal));
      },
      // The host's client is the host's: the seam never closes it.
      close: async () => undefined,
    };
    // One attempt per call, no push callback, no held stream: the seam answers within a request.
    const runner = new A2AInvokeRunner(
      client,
      {
        ...this.settings,
        push: false,
        streaming: false,
        maxAttempts: 1,
        pollMs: Math.min(this.settings.pollMs, SEAM_POLL_MS),
      },
      this.logger,
    );
    const node: A2AInvokeNode = {
      kind: "a2a.invoke",
      id: SEAM_NODE_ID,
      agentCardUrl: peerCardUrlOf(request.peerUrl),
      message: request.scenario !== undefined ? `scenario:${request.scenario}` : "OpenWOP conformance: invoke seam",
    };
    const record = await this.reads.find(run.taskId);
    // Our run, in the caller's tenant (not found otherwise, as a tenant-scoped read answers).
    if (!record || record.tenant !== run.tenant) throw taskNotFound(run.taskId);
    const stop = new AbortController();
    let progress: PeerProgress | undefined;
    const invokeRun: InvokeRun = {
      taskId: run.taskId,
      node,
      context: this.reads.contextOf(record),
      signal: stop.signal,
      // Kept here, never committed: the seam's node is not one of the run's nodes.
      record: async (next) => {
        progress = next;
        return true;
      },
    };
    const settle = setTimeout(() => stop.abort(), SETTLE_MS);
    let outcome: InvokeOutcome;
    try {
      outcome = await runner.run(invokeRun);
    } finally {
      clearTimeout(settle);
    }
    if (outcome.type === "fail" && seen.error) throw callError(seen.error, seen.endpoint !== undefined);
    if (!seen.endpoint)
      throw new DomainError("external-call-failed", `the peer's agent card did not come within ${SETTLE_MS} ms`, {});
    if (outcome.type === "stopped" && progress && !isTerminalPeerState(progress.peerState)) {
      // Still running on the peer: not left behind.
      await runner.cancelPeer(progress, "the invoke seam stopped watching it");
    }
    return {
      negotiatedVersion: parsePeerEndpoint(seen.endpoint).version,
      preferredVersion: PREFERRED_A2A_VERSION,
      ...(progress ? { peerTaskId: progress.peerTaskId, peerState: progress.peerState } : {}),
      outcome: outcomeOf(outcome, progress),
      taskReads: seen.reads,
    };
  }
}

function outcomeOf(outcome: InvokeOutcome, progress: PeerProgress | undefined): PeerInvokeReport["outcome"] {
  switch (outcome.type) {
    case "complete":
      return "completed";
    case "interrupt":
      return "input-required";
    case "fail":
      return "failed";
    case "cancel":
      return "canceled";
    case "stopped":
      return progress && isInterruptedPeerState(progress.peerState) ? "input-required" : "waiting";
  }
}
