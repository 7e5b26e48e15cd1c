import { everyLabelSet, labelSets, startAtZero, type Metrics } from "../observability/metrics.js";
import {
  EgressCallError,
  type EgressRequest,
  type EgressResponse,
  type EgressStream,
} from "../egress/egress-http-client.js";
import { PeerCallError } from "../peer/peer-http-client.js";
import type { PeerTransport } from "../peer/a2a-peer-client.js";

/**
 * What came of a call to a peer, as an operator sorts it: `ok`; `error`, the peer answered with one (an HTTP
 * error status, a gRPC status, a body we refuse); `no-answer`, it never answered (unreachable, timed out, the
 * egress guard refused the address, the call was abandoned). Over JSON-RPC the outcome is the HTTP answer's:
 * a JSON-RPC error inside a 200 counts as `ok` here (the task's own state tells the rest).
 */
export type PeerOutcome = "ok" | "error" | "no-answer";

const OUTCOMES: readonly PeerOutcome[] = ["ok", "error", "no-answer"];
const ANSWERED_KINDS: ReadonlySet<string> = new Set(["http", "protocol", "rpc", "unauthorized", "unsupported"]);

export function peerOutcomeOf(err: unknown): PeerOutcome {
  if (err instanceof EgressCallError || err instanceof PeerCallError)
    return ANSWERED_KINDS.has(err.kind) ? "error" : "no-answer";
  return "no-answer";
}

type Transport = "http" | "grpc";

/** The counter and latency of peer calls, every transport and outcome started at 0. */
function peerCounting(
  metrics: Metrics,
): <T>(transport: Transport, call: () => Promise<T>, outcomeOf?: (value: T) => PeerOutcome) => Promise<T> {
  startAtZero(metrics.peerRequests, everyLabelSet({ transport: ["http", "grpc"], outcome: OUTCOMES }));
  const labels = labelSets(["transport", "outcome"]);
  return async (transport, call, outcomeOf) => {
    const started = performance.now();
    let outcome: PeerOutcome = "no-answer";
    try {
      const value = await call();
      outcome = outcomeOf ? outcomeOf(value) : "ok";
      return value;
    } catch (err) {
      outcome = peerOutcomeOf(err);
      throw err;
    } finally {
      const set = labels(transport, outcome);
      metrics.peerRequests.add(1, set);
      metrics.peerRequestDuration.record((performance.now() - started) / 1000, set);
    }
  };
}

const byStatus = (answer: { status: number }): PeerOutcome =>
  answer.status >= 200 && answer.status < 300 ? "ok" : "error";

/** Peer calls over HTTP (card discovery, JWKS, JSON-RPC, HTTP+JSON; a held stream counts when it opens). */
export function countedPeerHttp<
  T extends {
    request(req: EgressRequest): Promise<EgressResponse>;
    stream?(req: EgressRequest): Promise<EgressStream>;
    close(): Promise<void>;
  },
>(http: T, metrics: Metrics): T {
  const count = peerCounting(metrics);
  const stream = http.stream?.bind(http);
  return {
    ...http,
    close: () => http.close(),
    request: (req: EgressRequest) => count("http", () => http.request(req), byStatus),
    ...(stream ? { stream: (req: EgressRequest) => count("http", () => stream(req), byStatus) } : {}),
  };
}

/** Peer calls over gRPC (send, get, cancel; a held SubscribeToTask stream is not a call and is not counted). */
export function countedPeerTransport(transport: PeerTransport, metrics: Metrics): PeerTransport {
  const count = peerCounting(metrics);
  return {
    send: (endpoint, message, options) => count("grpc", () => transport.send(endpoint, message, options)),
    getTask: (endpoint, taskId, options) => count("grpc", () => transport.getTask(endpoint, taskId, options)),
    cancelTask: (endpoint, taskId, options) => count("grpc", () => transport.cancelTask(endpoint, taskId, options)),
    ...(transport.subscribe ? { subscribe: transport.subscribe.bind(transport) } : {}),
    close: () => transport.close(),
  };
}
