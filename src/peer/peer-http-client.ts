/**
 * Outbound HTTP to remote A2A agents (the `a2a.invoke` node: cards, JSON-RPC and HTTP+JSON calls, OAuth2 token
 * requests, JWKS): the one egress client (egress/egress-http-client.ts: the SSRF guard on every request, pinned
 * connections, no redirects, one deadline, capped bodies) with the peer policy, its limits and user agent.
 *
 * Errors are PeerCallErrors that say whether a retry may help; their messages name the host, never the path.
 */
import {
  EgressRefusedError,
  EgressResolutionError,
  checkEgressUrl,
  type EgressPolicy,
  type EgressSubject,
  type ResolvedAddress,
  type Resolver,
} from "../egress/egress-guard.js";
import { compilePrivateService } from "../egress/egress-addresses.js";
import {
  createEgressHttpClient,
  EgressCallError,
  RETRYABLE_HTTP_STATUS,
  type EgressHttpClient,
  type EgressRequest,
  type EgressResponse,
  type EgressStream,
} from "../egress/egress-http-client.js";
import type { SecretValue } from "../secrets/secret-value.js";

/** A named peer's client certificate (mTLS, PEM): its connections present it; `ca` replaces the default CAs. */
export interface PeerClientTls {
  /** The peer's name: its connections are pooled apart from everyone else's. */
  id: string;
  cert: string;
  key: SecretValue<string>;
  ca?: string;
}

export type PeerCallErrorKind =
  | "egress"
  | "resolution"
  | "timeout"
  | "connection"
  | "http"
  | "protocol"
  | "rpc"
  | "aborted"
  | "unsupported"
  | "unauthorized"
  | "credentials";

/**
 * A failed call to a peer. `retryable` says whether the same call may succeed later (transport trouble).
 * `rpcCode` is the peer's JSON-RPC error code, or its gRPC status code for a call over gRPC; `httpStatus` the
 * HTTP status of a refused answer (a 401 lets fetched credentials be fetched again). Kind "credentials": our
 * own credentials could not be had (the peer's OAuth2 token endpoint failed).
 */
export class PeerCallError extends Error {
  override readonly name = "PeerCallError";
  constructor(
    message: string,
    readonly kind: PeerCallErrorKind,
    readonly retryable: boolean,
    readonly rpcCode?: number,
    readonly httpStatus?: number,
  ) {
    super(message);
  }
}

export type PeerHttpRequest = EgressRequest;
export type PeerHttpResponse = EgressResponse;
export type PeerHttpStream = EgressStream;

/** The egress client as peers see it: the same calls, failures as PeerCallErrors. */
export interface PeerHttpClient {
  request(req: PeerHttpRequest): Promise<PeerHttpResponse>;
  stream?(req: PeerHttpRequest): Promise<PeerHttpStream>;
  close(): Promise<void>;
}

export const DEFAULT_MAX_PEER_RESPONSE_BYTES = 4 * 1024 * 1024;
export { RETRYABLE_HTTP_STATUS };

/** An egress failure in the peer's terms: the same message, kind and retry decision (a refused header is connection trouble). */
export function peerCallErrorOf(err: unknown): unknown {
  if (!(err instanceof EgressCallError)) return err;
  return new PeerCallError(err.message, err.kind === "invalid-request" ? "connection" : err.kind, err.retryable);
}

/**
 * The egress guard on a peer URL (a card or JSON-RPC URL, or the https:// / http:// form of a gRPC target), as
 * PeerCallErrors: a refusal is final, a name that does not resolve may resolve later. Returns the addresses a
 * connection may use; connect only to these (pinnedLookup).
 */
export async function checkPeerUrl(
  url: string,
  policy: EgressPolicy,
  resolve: Resolver,
  subject: EgressSubject = "peer",
): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
  try {
    return await checkEgressUrl(url, policy, subject, resolve);
  } catch (err) {
    if (err instanceof EgressRefusedError)
      throw new PeerCallError(
        `${subject} URL refused by the ${err.arm} arm of the egress guard: ${err.reason}`,
        "egress",
        false,
      );
    if (err instanceof EgressResolutionError) throw new PeerCallError(err.message, "resolution", true);
    throw new PeerCallError(`${subject} URL check failed (egress policy error)`, "egress", false);
  }
}

/** A private-service entry (host:port, cidr:port) for a client's policy: undefined when valid, else why not. */
export function privateServiceEntryProblem(entry: string): string | undefined {
  try {
    compilePrivateService(entry);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * The peers' client: the egress client (egress/egress-http-client.ts) with the peer policy, its limits and user
 * agent, whose failures come back as PeerCallErrors (stream chunks included).
 */
export function createPeerHttpClient(opts: {
  policy: EgressPolicy;
  resolve?: Resolver;
  maxResponseBytes?: number;
  userAgent?: string;
  /** CA certificates trusted for peers' servers (A2A_PEERS_CA_FILE); a peer's mTLS `caFile` wins. */
  ca?: string;
  onTlsFailure?: (where: string, code: string) => void;
}): PeerHttpClient {
  return peerHttpClient(
    createEgressHttpClient({
      policy: opts.policy,
      subject: "peer",
      userAgent: opts.userAgent ?? "openwop-a2a-host/a2a-invoke",
      maxResponseBytes: opts.maxResponseBytes ?? DEFAULT_MAX_PEER_RESPONSE_BYTES,
      accept: "application/json",
      ...(opts.resolve ? { resolve: opts.resolve } : {}),
      ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
      ...(opts.onTlsFailure ? { onTlsFailure: opts.onTlsFailure } : {}),
    }),
  );
}

/** An egress client whose failures are PeerCallErrors. */
export function peerHttpClient(egress: EgressHttpClient): PeerHttpClient {
  const rethrow = (err: unknown): never => {
    throw peerCallErrorOf(err);
  };
  return {
    request: (req) => egress.request(req).catch(rethrow),
    async stream(req) {
      const answer = await egress.stream(req).catch(rethrow);
      async function* text(): AsyncGenerator<string> {
        try {
          yield* answer.text;
        } catch (err) {
          rethrow(err);
        }
      }
      return { ...answer, text: text() };
    },
    close: () => egress.close(),
  };
}
