/**
 * Outbound HTTP to remote A2A agents (the `a2a.invoke` node). Calls to peers are egress exactly like push
 * deliveries, so every request goes through the same SSRF guard (`checkEgressUrl`: scheme, address, policy and
 * port arms, every resolved address checked) and then over a pinned pool (egress/pinned-pools.ts) whose socket
 * `lookup` answers only with the checked addresses: the name is never resolved a second time between check and
 * connect. Redirects are never followed (a 3xx is an error), `Connection: upgrade` is refused, each request
 * has one deadline, and response bodies are capped.
 *
 * Errors are PeerCallErrors that say whether a retry may help; their messages name the host, never the path.
 */
import type { Dispatcher } from "undici";
import { EgressRefusedError, EgressResolutionError, checkEgressUrl, defaultResolver, type EgressPolicy, type ResolvedAddress, type Resolver } from "../egress/egress-guard.js";
import { errorCode, hasUpgradeToken } from "../egress/pinned-connection.js";
import { createPinnedPools } from "../egress/pinned-pools.js";

export type PeerCallErrorKind = "egress" | "resolution" | "timeout" | "connection" | "http" | "protocol" | "rpc" | "aborted" | "unsupported";

/**
 * A failed call to a peer. `retryable` says whether the same call may succeed later (transport trouble).
 * `rpcCode` is the peer's JSON-RPC error code, or its gRPC status code for a call over gRPC.
 */
export class PeerCallError extends Error {
  override readonly name = "PeerCallError";
  constructor(
    message: string,
    readonly kind: PeerCallErrorKind,
    readonly retryable: boolean,
    readonly rpcCode?: number,
  ) {
    super(message);
  }
}

export interface PeerHttpRequest {
  method: "GET" | "POST";
  url: string;
  body?: string;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** Aborts the request (the caller gave up); the error is then kind "aborted". */
  signal?: AbortSignal;
}

export interface PeerHttpResponse {
  status: number;
  contentType: string;
  body: string;
}

export interface PeerHttpClient {
  request(req: PeerHttpRequest): Promise<PeerHttpResponse>;
  close(): Promise<void>;
}

export const DEFAULT_MAX_PEER_RESPONSE_BYTES = 4 * 1024 * 1024;
const MAX_POOLS = 16;
const KEEP_ALIVE_MS = 4_000;
const RETRYABLE_STATUS: ReadonlySet<number> = new Set([408, 425, 429, 502, 503, 504]);

async function readCapped(body: Dispatcher.ResponseData["body"], cap: number, where: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > cap) {
      body.destroy();
      throw new PeerCallError(`${where} answered more than ${cap} bytes`, "protocol", false);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The egress guard on a peer URL (a card or JSON-RPC URL, or the https:// / http:// form of a gRPC target), as
 * PeerCallErrors: a refusal is final, a name that does not resolve may resolve later. Returns the addresses a
 * connection may use; connect only to these (pinnedLookup).
 */
export async function checkPeerUrl(url: string, policy: EgressPolicy, resolve: Resolver): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
  try {
    return await checkEgressUrl(url, policy, "peer", resolve);
  } catch (err) {
    if (err instanceof EgressRefusedError) throw new PeerCallError(`peer URL refused by the ${err.arm} arm of the egress guard: ${err.reason}`, "egress", false);
    if (err instanceof EgressResolutionError) throw new PeerCallError(err.message, "resolution", true);
    throw new PeerCallError("peer URL check failed (egress policy error)", "egress", false);
  }
}

export function createPeerHttpClient(opts: { policy: EgressPolicy; resolve?: Resolver; maxResponseBytes?: number; userAgent?: string }): PeerHttpClient {
  const resolve = opts.resolve ?? defaultResolver;
  const cap = opts.maxResponseBytes ?? DEFAULT_MAX_PEER_RESPONSE_BYTES;
  const pools = createPinnedPools({ maxPools: MAX_POOLS, connectionsPerPool: 4, keepAliveMs: KEEP_ALIVE_MS });
  let closed = false;

  return {
    async request(req: PeerHttpRequest): Promise<PeerHttpResponse> {
      if (closed) throw new PeerCallError("the peer HTTP client is closed", "aborted", false);
      const deadline = AbortSignal.timeout(req.timeoutMs);
      const signal = req.signal ? AbortSignal.any([req.signal, deadline]) : deadline;
      let where = "the peer";
      const failure = (err: unknown): PeerCallError => {
        if (err instanceof PeerCallError) return err;
        if (req.signal?.aborted) return new PeerCallError(`the call to ${where} was abandoned`, "aborted", false);
        const code = errorCode(err);
        if (deadline.aborted || (code && /TIMEOUT/.test(code))) return new PeerCallError(`${where} did not answer within ${req.timeoutMs} ms`, "timeout", true);
        if (code && /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(code)) return new PeerCallError(`TLS error talking to ${where} (${code})`, "connection", true);
        return new PeerCallError(`cannot reach ${where}${code ? ` (${code})` : ""}`, "connection", true);
      };

      const checked = await checkPeerUrl(req.url, opts.policy, resolve);
      where = `${checked.url.protocol}//${checked.url.host}`;
      const entry = pools.acquire(checked.url, checked.addresses);
      try {
        return await exchange(entry.pool, checked.url, req, signal, where, failure, cap, opts.userAgent);
      } finally {
        pools.release(entry, false);
      }
    },

    async close(): Promise<void> {
      closed = true;
      await pools.destroyAll();
    },
  };
}

/** One request over a pinned pool: no redirects, no upgrade, the body capped. */
async function exchange(pool: Dispatcher, url: URL, req: PeerHttpRequest, signal: AbortSignal, where: string, failure: (err: unknown) => PeerCallError, cap: number, userAgent: string | undefined): Promise<PeerHttpResponse> {
  let response: Dispatcher.ResponseData;
  try {
    response = await pool.request({
      method: req.method,
      path: `${url.pathname}${url.search}`,
      headers: {
        accept: "application/json",
        "user-agent": userAgent ?? "openwop-a2a-host/a2a-invoke",
        ...(req.body !== undefined ? { "content-type": "application/json" } : {}),
        ...req.headers,
      },
      ...(req.body !== undefined ? { body: req.body } : {}),
      signal,
      headersTimeout: req.timeoutMs,
      bodyTimeout: req.timeoutMs,
    });
  } catch (err) {
    throw failure(err);
  }
  const { statusCode, headers, body } = response;
  body.on("error", () => undefined);
  if (statusCode === 101 || hasUpgradeToken(headers["connection"])) {
    body.destroy();
    throw new PeerCallError(`${where} answered with Connection: upgrade (refused)`, "protocol", false);
  }
  if (statusCode >= 300 && statusCode < 400) {
    body.destroy();
    throw new PeerCallError(`${where} answered ${statusCode}; redirects are not followed`, "http", false);
  }
  let text: string;
  try {
    text = await readCapped(body, cap, where);
  } catch (err) {
    throw failure(err);
  }
  if (statusCode >= 400) {
    throw new PeerCallError(`${where} answered HTTP ${statusCode}`, "http", statusCode >= 500 || RETRYABLE_STATUS.has(statusCode));
  }
  const contentType = headers["content-type"];
  return { status: statusCode, contentType: Array.isArray(contentType) ? (contentType[0] ?? "") : (contentType ?? ""), body: text };
}
