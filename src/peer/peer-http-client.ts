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
import { EgressRefusedError, EgressResolutionError, checkEgressUrl, defaultResolver, type EgressPolicy, type EgressSubject, type ResolvedAddress, type Resolver } from "../egress/egress-guard.js";
import { compilePrivateService } from "../egress/egress-addresses.js";
import { errorCode, hasUpgradeToken } from "../egress/pinned-connection.js";
import { createPinnedPools, type ClientTls } from "../egress/pinned-pools.js";
import type { SecretValue } from "../secrets/secret-value.js";

/** A named peer's client certificate (mTLS, PEM): its connections present it; `ca` replaces the default CAs. */
export interface PeerClientTls {
  /** The peer's name: its connections are pooled apart from everyone else's. */
  id: string;
  cert: string;
  key: SecretValue<string>;
  ca?: string;
}

/** The pool's view of a client certificate (the key revealed only here, into the TLS options). */
function clientTlsOf(tls: PeerClientTls | undefined): ClientTls | undefined {
  return tls ? { id: tls.id, cert: tls.cert, key: tls.key.reveal(), ...(tls.ca !== undefined ? { ca: tls.ca } : {}) } : undefined;
}

export type PeerCallErrorKind = "egress" | "resolution" | "timeout" | "connection" | "http" | "protocol" | "rpc" | "aborted" | "unsupported" | "unauthorized" | "credentials";

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

export interface PeerHttpRequest {
  method: "GET" | "POST" | "PUT" | "PATCH";
  url: string;
  body?: string;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** Aborts the request (the caller gave up); the error is then kind "aborted". */
  signal?: AbortSignal;
  /** Answer 4xx/5xx responses (body capped) instead of throwing, for callers that read error bodies (the `http` node). */
  returnErrorStatus?: boolean;
  /** The named peer's client certificate (mTLS). */
  tls?: PeerClientTls;
  /** `stream` only: a body silent this long (no event, no keepalive) is dropped as broken (a half-open connection). */
  idleTimeoutMs?: number;
}

export interface PeerHttpResponse {
  status: number;
  contentType: string;
  body: string;
  /** The response's Retry-After header, if any. */
  retryAfter?: string;
}

/** A response whose body is read as it comes (a task's SSE stream): `text` yields its chunks until the peer closes it. */
export interface PeerHttpStream {
  status: number;
  contentType: string;
  text: AsyncIterable<string>;
}

export interface PeerHttpClient {
  request(req: PeerHttpRequest): Promise<PeerHttpResponse>;
  /**
   * A held request (SSE): the same guard and pinning, `timeoutMs` bounds only the wait for the headers; the body
   * has no deadline and ends with `signal`. Streams use pools of their own, so a held stream never queues the
   * peer's other calls behind it.
   */
  stream?(req: PeerHttpRequest): Promise<PeerHttpStream>;
  close(): Promise<void>;
}

export const DEFAULT_MAX_PEER_RESPONSE_BYTES = 4 * 1024 * 1024;
const MAX_POOLS = 16;
/** Task streams held open to one peer origin at once (each is one HTTP/1.1 connection); more wait for a connection. */
const MAX_STREAMS_PER_PEER = 64;
const KEEP_ALIVE_MS = 4_000;
/** 4xx statuses that may clear up on their own (every 5xx may too). */
export const RETRYABLE_HTTP_STATUS: ReadonlySet<number> = new Set([408, 425, 429, 502, 503, 504]);

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
export async function checkPeerUrl(url: string, policy: EgressPolicy, resolve: Resolver, subject: EgressSubject = "peer"): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
  try {
    return await checkEgressUrl(url, policy, subject, resolve);
  } catch (err) {
    if (err instanceof EgressRefusedError) throw new PeerCallError(`${subject} URL refused by the ${err.arm} arm of the egress guard: ${err.reason}`, "egress", false);
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

/** `subject` names the caller in egress refusals ("peer" by default; the `http` node's client says "http node"). */
export function createPeerHttpClient(opts: { policy: EgressPolicy; resolve?: Resolver; maxResponseBytes?: number; userAgent?: string; subject?: EgressSubject }): PeerHttpClient {
  const resolve = opts.resolve ?? defaultResolver;
  const cap = opts.maxResponseBytes ?? DEFAULT_MAX_PEER_RESPONSE_BYTES;
  const pools = createPinnedPools({ maxPools: MAX_POOLS, connectionsPerPool: 4, keepAliveMs: KEEP_ALIVE_MS });
  const streamPools = createPinnedPools({ maxPools: MAX_POOLS, connectionsPerPool: MAX_STREAMS_PER_PEER, keepAliveMs: KEEP_ALIVE_MS });
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

      const checked = await checkPeerUrl(req.url, opts.policy, resolve, opts.subject);
      where = `${checked.url.protocol}//${checked.url.host}`;
      const entry = pools.acquire(checked.url, checked.addresses, clientTlsOf(req.tls));
      try {
        return await exchange(entry.pool, checked.url, req, signal, where, failure, cap, opts.userAgent);
      } finally {
        pools.release(entry, false);
      }
    },

    async stream(req: PeerHttpRequest): Promise<PeerHttpStream> {
      if (closed) throw new PeerCallError("the peer HTTP client is closed", "aborted", false);
      const headersDeadline = AbortSignal.timeout(req.timeoutMs);
      const checked = await checkPeerUrl(req.url, opts.policy, resolve, opts.subject);
      const where = `${checked.url.protocol}//${checked.url.host}`;
      const entry = streamPools.acquire(checked.url, checked.addresses, clientTlsOf(req.tls));
      let response: Dispatcher.ResponseData;
      const abortHeaders = new AbortController();
      const onDeadline = () => abortHeaders.abort();
      headersDeadline.addEventListener("abort", onDeadline, { once: true });
      try {
        response = await entry.pool.request({
          method: req.method,
          path: `${checked.url.pathname}${checked.url.search}`,
          headers: { accept: "text/event-stream", "user-agent": opts.userAgent ?? "openwop-a2a-host/a2a-invoke", ...(req.body !== undefined ? { "content-type": "application/json" } : {}), ...req.headers },
          ...(req.body !== undefined ? { body: req.body } : {}),
          signal: req.signal ? AbortSignal.any([req.signal, abortHeaders.signal]) : abortHeaders.signal,
          headersTimeout: req.timeoutMs,
          bodyTimeout: req.idleTimeoutMs ?? 0,
        });
      } catch (err) {
        streamPools.release(entry, true);
        if (req.signal?.aborted) throw new PeerCallError(`the stream from ${where} was abandoned`, "aborted", false);
        if (headersDeadline.aborted) throw new PeerCallError(`${where} did not answer within ${req.timeoutMs} ms`, "timeout", true);
        const code = errorCode(err);
        throw new PeerCallError(`cannot reach ${where}${code ? ` (${code})` : ""}`, "connection", true);
      } finally {
        headersDeadline.removeEventListener("abort", onDeadline);
      }
      const { statusCode, headers, body } = response;
      body.on("error", () => undefined);
      const contentType = headers["content-type"];
      const type = Array.isArray(contentType) ? (contentType[0] ?? "") : (contentType ?? "");
      if (statusCode === 101 || hasUpgradeToken(headers["connection"]) || (statusCode >= 300 && statusCode < 400)) {
        body.destroy();
        streamPools.release(entry, false);
        throw new PeerCallError(`${where} answered ${statusCode} to a stream request (refused)`, "http", false);
      }
      async function* text(): AsyncGenerator<string> {
        try {
          for await (const chunk of body) yield (chunk as Buffer).toString("utf8");
        } catch (err) {
          if (req.signal?.aborted) return;
          const code = errorCode(err);
          throw new PeerCallError(`the stream from ${where} broke${code ? ` (${code})` : ""}`, "connection", true);
        } finally {
          body.destroy();
          streamPools.release(entry, false);
        }
      }
      return { status: statusCode, contentType: type, text: text() };
    },

    async close(): Promise<void> {
      closed = true;
      await Promise.all([pools.destroyAll(), streamPools.destroyAll()]);
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
  const retryAfter = headers["retry-after"];
  if (statusCode >= 400 && req.returnErrorStatus !== true) {
    throw new PeerCallError(`${where} answered HTTP ${statusCode}`, "http", statusCode >= 500 || RETRYABLE_HTTP_STATUS.has(statusCode));
  }
  const contentType = headers["content-type"];
  return {
    status: statusCode,
    contentType: Array.isArray(contentType) ? (contentType[0] ?? "") : (contentType ?? ""),
    body: text,
    ...(retryAfter !== undefined ? { retryAfter: Array.isArray(retryAfter) ? (retryAfter[0] ?? "") : retryAfter } : {}),
  };
}
