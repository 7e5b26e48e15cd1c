/**
 * The one outbound HTTP client: push deliveries, calls to peer agents (JSON-RPC, HTTP+JSON, card fetches, OAuth2
 * token requests), `http` nodes and JWKS fetches all go out through it, each with its own policy, limits and
 * user agent. The guarantees are the same for every caller:
 *
 *   - every request runs the SSRF guard (`checkEgressUrl`: url, scheme, address, policy and port arms, every
 *     resolved address checked), raced against the request's deadline;
 *   - the connection is pinned (pinned-pools.ts): its socket `lookup` answers only with the checked addresses, so
 *     the name is never resolved a second time between check and connect;
 *   - redirects are never followed (a 3xx is an error), `Connection: upgrade` is refused, each request has one
 *     deadline (resolution, connect, headers and body), and response bodies are capped.
 *
 * Failures are EgressCallErrors that say whether a retry may help; their messages name the origin, never the path
 * or query (which may carry secrets), and never a header value. Callers with their own error vocabulary (peers'
 * PeerCallError, push's PushResult) translate them; nothing else here knows who is calling.
 */
import type { Dispatcher } from "undici";
import {
  EgressRefusedError,
  EgressResolutionError,
  checkEgressUrl,
  defaultResolver,
  type EgressPolicy,
  type EgressSubject,
  type ResolvedAddress,
  type Resolver,
} from "./egress-guard.js";
import { errorCode, hasUpgradeToken } from "./pinned-connection.js";
import { createPinnedPools, type ClientTls, type PinnedPools } from "./pinned-pools.js";
import { isTlsFailureCode } from "./tls-failure-report.js";

/**
 * What went wrong: `egress` the guard refused the URL (final); `resolution` the name did not resolve; `timeout`
 * the deadline passed; `connection` the peer could not be reached or the connection broke (TLS included; `code`
 * says which); `invalid-request` a header name or value was refused before sending; `http` a refused status (a
 * 3xx always, a 4xx/5xx unless the caller reads error bodies); `protocol` an upgrade or a body over the cap;
 * `aborted` the caller gave up or the client is closed.
 */
export type EgressFailureKind =
  "egress" | "resolution" | "timeout" | "connection" | "invalid-request" | "http" | "protocol" | "aborted";

export class EgressCallError extends Error {
  override readonly name = "EgressCallError";
  constructor(
    message: string,
    readonly kind: EgressFailureKind,
    readonly retryable: boolean,
    readonly detail: {
      /** The system error code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, ERR_TLS_…); never the error's message. */
      code?: string;
      /** The refused status (kind `http`), or the status of an upgrade answer. */
      httpStatus?: number;
      /** The guard's own error (kind `egress` or `resolution`), whose message names the subject and the arm. */
      guard?: EgressRefusedError | EgressResolutionError;
      /** The deadline passed while the name was being resolved (kind `timeout`). */
      resolving?: boolean;
      /** Kind `protocol`: the answer asked to switch protocols. */
      upgrade?: boolean;
    } = {},
  ) {
    super(message);
  }
}

/** A client certificate (mTLS, PEM) for a named caller's connections: they are pooled apart; `ca` replaces the default CAs. */
export interface EgressClientTls {
  /** Who presents it (a peer's name): its connections are pooled apart from everyone else's. */
  id: string;
  cert: string;
  key: { reveal(): string };
  ca?: string;
}

export interface EgressRequest {
  method: "GET" | "POST" | "PUT" | "PATCH";
  url: string;
  body?: string;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** Aborts the request (the caller gave up); the error is then kind "aborted". */
  signal?: AbortSignal;
  /** Answer 4xx/5xx responses (body capped) instead of throwing, for callers that read error bodies. */
  returnErrorStatus?: boolean;
  /** Read and drop the body (at most the cap; past it the connection is dropped, without an error): push deliveries. */
  discardBody?: boolean;
  /** This request's body cap, instead of the client's. */
  maxResponseBytes?: number;
  /** The caller's client certificate (mTLS). */
  tls?: EgressClientTls;
  /** `stream` only: a body silent this long (no event, no keepalive) is dropped as broken (a half-open connection). */
  idleTimeoutMs?: number;
}

export interface EgressResponse {
  status: number;
  contentType: string;
  body: string;
  /** The response's Retry-After header, if any. */
  retryAfter?: string;
}

/** A response whose body is read as it comes (a task's SSE stream): `text` yields its chunks until the server closes it. */
export interface EgressStream {
  status: number;
  contentType: string;
  text: AsyncIterable<string>;
}

export interface EgressHttpClient {
  request(req: EgressRequest): Promise<EgressResponse>;
  /**
   * A held request (SSE): the same guard and pinning, `timeoutMs` bounds only the wait for the headers; the body
   * has no deadline and ends with `signal`. Streams use pools of their own, so a held stream never queues the
   * origin's other calls behind it.
   */
  stream(req: EgressRequest): Promise<EgressStream>;
  close(): Promise<void>;
}

export interface EgressClientOptions {
  /** The caller's egress policy (its settings are named in refusals). */
  policy: EgressPolicy;
  /** Names the caller in refusals ("push URL refused by …", "peer URL host … could not be resolved"). */
  subject: EgressSubject;
  userAgent: string;
  /** Response bodies past this many bytes fail the request (kind `protocol`), or are dropped unread (`discardBody`). */
  maxResponseBytes: number;
  /** Sent unless the request sets its own (callers that read JSON answers say so; push says nothing). */
  accept?: string;
  /** Tests only: the DNS resolver of the guard. */
  resolve?: Resolver;
  /** How many (origin, addresses) pools are kept for reuse (default 16). */
  maxPools?: number;
  /** Happy eyeballs across the checked addresses. */
  autoSelectFamily?: boolean;
  /** Trusted CAs (PEM) for servers' certificates, instead of Node's default ones (a request's client certificate may name its own). */
  ca?: string;
  /** Told of every TLS failure (`code`: Node's or OpenSSL's, e.g. UNABLE_TO_VERIFY_LEAF_SIGNATURE) toward `where` (an origin). */
  onTlsFailure?: (where: string, code: string) => void;
}

const CONNECTIONS_PER_POOL = 4;
/** Streams held open to one origin at once (each is one HTTP/1.1 connection); more wait for a connection. */
const MAX_STREAMS_PER_ORIGIN = 64;
const KEEP_ALIVE_MS = 4_000;
/** 4xx statuses that may clear up on their own (every 5xx may too). */
export const RETRYABLE_HTTP_STATUS: ReadonlySet<number> = new Set([408, 425, 429, 502, 503, 504]);
const INVALID_REQUEST_CODES: ReadonlySet<string> = new Set([
  "UND_ERR_INVALID_ARG",
  "ERR_INVALID_CHAR",
  "ERR_INVALID_HTTP_TOKEN",
]);

export function createEgressHttpClient(opts: EgressClientOptions): EgressHttpClient {
  const resolve = opts.resolve ?? defaultResolver;
  const poolOptions = {
    maxPools: opts.maxPools ?? 16,
    keepAliveMs: KEEP_ALIVE_MS,
    ...(opts.autoSelectFamily ? { autoSelectFamily: true } : {}),
    ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
  };
  const pools = createPinnedPools({ ...poolOptions, connectionsPerPool: CONNECTIONS_PER_POOL });
  let streamPools: PinnedPools | undefined;
  let closed = false;
  const closedError = () => new EgressCallError(`the ${opts.subject} HTTP client is closed`, "aborted", false);

  /** The guard on the URL, raced against `deadline`: the addresses a connection may use. */
  async function check(
    url: string,
    deadline: AbortSignal,
    timeoutMs: number,
  ): Promise<{ url: URL; addresses: ResolvedAddress[]; where: string }> {
    let checked: Awaited<ReturnType<typeof checkEgressUrl>>;
    try {
      checked = await raceAbort(checkEgressUrl(url, opts.policy, opts.subject, resolve), deadline);
    } catch (err) {
      if (err instanceof EgressRefusedError)
        throw new EgressCallError(
          `${opts.subject} URL refused by the ${err.arm} arm of the egress guard: ${err.reason}`,
          "egress",
          false,
          { guard: err },
        );
      if (err instanceof EgressResolutionError)
        throw new EgressCallError(err.message, "resolution", true, { guard: err });
      if (deadline.aborted)
        throw new EgressCallError(
          `the ${opts.subject} URL host was not resolved within ${timeoutMs} ms`,
          "timeout",
          true,
          { resolving: true },
        );
      throw new EgressCallError(`${opts.subject} URL check failed (egress policy error)`, "egress", false);
    }
    if (closed) throw closedError();
    return { ...checked, where: `${checked.url.protocol}//${checked.url.host}` };
  }

  function headersOf(req: EgressRequest, accept: string | undefined): Record<string, string> {
    return {
      ...(accept !== undefined ? { accept } : {}),
      "user-agent": opts.userAgent,
      ...(req.body !== undefined ? { "content-type": "application/json" } : {}),
      ...req.headers,
    };
  }

  /** A failed exchange as an EgressCallError: who gave up (the caller, the deadline), or what the connection said. */
  function failure(err: unknown, req: EgressRequest, deadline: AbortSignal, where: string): EgressCallError {
    if (err instanceof EgressCallError) return err;
    const code = errorCode(err);
    const detail = code !== undefined ? { code } : {};
    if (req.signal?.aborted) return new EgressCallError(`the call to ${where} was abandoned`, "aborted", false, detail);
    if (deadline.aborted || (code && /TIMEOUT/.test(code)))
      return new EgressCallError(`${where} did not answer within ${req.timeoutMs} ms`, "timeout", true, detail);
    if (code === "UND_ERR_SOCKET" && (err as Error).message === "bad upgrade") {
      return new EgressCallError(`${where} answered with Connection: upgrade (refused)`, "protocol", false, {
        ...detail,
        upgrade: true,
      });
    }
    if (code !== undefined && INVALID_REQUEST_CODES.has(code))
      return new EgressCallError(
        `the request to ${where} was refused before sending (a header name or value is invalid)`,
        "invalid-request",
        false,
        detail,
      );
    if (isTlsFailureCode(code)) {
      opts.onTlsFailure?.(where, code);
      return new EgressCallError(`TLS error talking to ${where} (${code})`, "connection", true, detail);
    }
    return new EgressCallError(`cannot reach ${where}${code ? ` (${code})` : ""}`, "connection", true, detail);
  }

  return {
    async request(req) {
      if (closed) throw closedError();
      const started = performance.now();
      const deadline = AbortSignal.timeout(req.timeoutMs);
      const signal = req.signal ? AbortSignal.any([req.signal, deadline]) : deadline;
      const { url, addresses, where } = await check(req.url, signal, req.timeoutMs).catch((err: unknown) => {
        throw req.signal?.aborted
          ? new EgressCallError(`the call to the ${opts.subject} URL was abandoned`, "aborted", false)
          : err;
      });
      // What is left of the deadline after the resolution, for undici's own timers.
      const remaining = () => Math.max(1, Math.ceil(req.timeoutMs - (performance.now() - started)));
      const entry = pools.acquire(url, addresses, clientTlsOf(req.tls));
      let failed = false;
      try {
        let response: Dispatcher.ResponseData;
        try {
          response = await entry.pool.request({
            method: req.method,
            path: `${url.pathname}${url.search}`,
            headers: headersOf(req, opts.accept),
            ...(req.body !== undefined ? { body: req.body } : {}),
            signal,
            headersTimeout: remaining(),
            bodyTimeout: remaining(),
          });
        } catch (err) {
          failed = true;
          throw failure(err, req, deadline, where);
        }
        const { statusCode, headers, body } = response;
        // Destroying a body early makes undici emit an abort error on it; nobody else listens.
        body.on("error", ignore);
        if (statusCode === 101 || hasUpgradeToken(headers["connection"])) {
          failed = true;
          body.destroy();
          throw new EgressCallError(`${where} answered with Connection: upgrade (refused)`, "protocol", false, {
            httpStatus: statusCode,
            upgrade: true,
          });
        }
        if (statusCode >= 300 && statusCode < 400) {
          body.destroy();
          throw new EgressCallError(`${where} answered ${statusCode}; redirects are not followed`, "http", false, {
            httpStatus: statusCode,
          });
        }
        let text = "";
        const cap = req.maxResponseBytes ?? opts.maxResponseBytes;
        if (req.discardBody) await drainCapped(body, cap);
        else {
          try {
            text = await readCapped(body, cap, where);
          } catch (err) {
            throw failure(err, req, deadline, where);
          }
        }
        if (statusCode >= 400 && req.returnErrorStatus !== true) {
          throw new EgressCallError(
            `${where} answered HTTP ${statusCode}`,
            "http",
            statusCode >= 500 || RETRYABLE_HTTP_STATUS.has(statusCode),
            { httpStatus: statusCode },
          );
        }
        const retryAfter = first(headers["retry-after"]);
        return {
          status: statusCode,
          contentType: first(headers["content-type"]) ?? "",
          body: text,
          ...(retryAfter !== undefined ? { retryAfter } : {}),
        };
      } finally {
        pools.release(entry, failed);
      }
    },

    async stream(req) {
      if (closed) throw closedError();
      const headersDeadline = AbortSignal.timeout(req.timeoutMs);
      const { url, addresses, where } = await check(
        req.url,
        req.signal ? AbortSignal.any([req.signal, headersDeadline]) : headersDeadline,
        req.timeoutMs,
      ).catch((err: unknown) => {
        throw req.signal?.aborted
          ? new EgressCallError(`the stream from the ${opts.subject} URL was abandoned`, "aborted", false)
          : err;
      });
      streamPools ??= createPinnedPools({ ...poolOptions, connectionsPerPool: MAX_STREAMS_PER_ORIGIN });
      const streams = streamPools;
      const entry = streams.acquire(url, addresses, clientTlsOf(req.tls));
      let response: Dispatcher.ResponseData;
      try {
        response = await entry.pool.request({
          method: req.method,
          path: `${url.pathname}${url.search}`,
          headers: headersOf({ ...req, headers: { accept: "text/event-stream", ...req.headers } }, undefined),
          ...(req.body !== undefined ? { body: req.body } : {}),
          signal: req.signal ? AbortSignal.any([req.signal, headersDeadline]) : headersDeadline,
          headersTimeout: req.timeoutMs,
          bodyTimeout: req.idleTimeoutMs ?? 0,
        });
      } catch (err) {
        streams.release(entry, true);
        if (req.signal?.aborted) throw new EgressCallError(`the stream from ${where} was abandoned`, "aborted", false);
        throw failure(err, req, headersDeadline, where);
      }
      const { statusCode, headers, body } = response;
      body.on("error", ignore);
      if (statusCode === 101 || hasUpgradeToken(headers["connection"]) || (statusCode >= 300 && statusCode < 400)) {
        body.destroy();
        streams.release(entry, false);
        throw new EgressCallError(`${where} answered ${statusCode} to a stream request (refused)`, "http", false, {
          httpStatus: statusCode,
        });
      }
      async function* text(): AsyncGenerator<string> {
        try {
          for await (const chunk of body) yield (chunk as Buffer).toString("utf8");
        } catch (err) {
          if (req.signal?.aborted) return;
          const code = errorCode(err);
          throw new EgressCallError(
            `the stream from ${where} broke${code ? ` (${code})` : ""}`,
            "connection",
            true,
            code !== undefined ? { code } : {},
          );
        } finally {
          body.destroy();
          streams.release(entry, false);
        }
      }
      return { status: statusCode, contentType: first(headers["content-type"]) ?? "", text: text() };
    },

    async close() {
      closed = true;
      await Promise.all([pools.destroyAll(), streamPools?.destroyAll()]);
    },
  };
}

/** The pool's view of a client certificate (the key revealed only here, into the TLS options). */
function clientTlsOf(tls: EgressClientTls | undefined): ClientTls | undefined {
  return tls
    ? { id: tls.id, cert: tls.cert, key: tls.key.reveal(), ...(tls.ca !== undefined ? { ca: tls.ca } : {}) }
    : undefined;
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

async function readCapped(body: Dispatcher.ResponseData["body"], cap: number, where: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > cap) {
      body.destroy();
      throw new EgressCallError(`${where} answered more than ${cap} bytes`, "protocol", false);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Read at most `cap` bytes of the body and drop them; stop early (destroying the stream) past the cap. */
async function drainCapped(body: Dispatcher.ResponseData["body"], cap: number): Promise<void> {
  let seen = 0;
  try {
    for await (const chunk of body) {
      seen += (chunk as Buffer).length;
      if (seen > cap) break;
    }
  } catch {
    // Body errors (timeout, reset, abort) do not change an outcome already decided by the status.
  } finally {
    if (!body.destroyed && seen > cap) body.destroy();
  }
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolvePromise, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolvePromise(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

function ignore(): void {}
