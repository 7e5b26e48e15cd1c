/**
 * Push-notification delivery over undici, pinned to the addresses the egress guard checked.
 *
 * Every `post` re-runs `checkEgressUrl` (delivery-time revalidation against DNS rebinding), then sends
 * the request through a pinned pool (egress/pinned-pools.ts): the OS resolver is never asked a second
 * time between check and connect.
 *
 * Redirects are never followed (a 3xx is a failed attempt), `Connection: upgrade` answers are
 * refused, the whole attempt (DNS, connect, headers, body) runs under one timeout, and at most
 * `maxResponseBytes` of the response body are read and discarded.
 *
 * Header values carry tokens: they are never logged and never appear in a PushResult.
 */
import type { Dispatcher } from "undici";
import { EgressRefusedError, EgressResolutionError, checkEgressUrl, defaultResolver, type EgressPolicy, type Resolver } from "../egress/egress-guard.js";
import { errorCode, hasUpgradeToken } from "../egress/pinned-connection.js";
import { createPinnedPools } from "../egress/pinned-pools.js";
import { CONNECTION_HEADERS } from "../domain/http-headers.js";

export interface PushRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  maxResponseBytes?: number;
}

export interface PushResult {
  ok: boolean;
  status?: number;
  error?: string;
  retryable: boolean;
  durationMs: number;
}

export interface PushHttpClient {
  post(req: PushRequest): Promise<PushResult>;
  close(): Promise<void>;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

/** How many pinned (origin, addresses) connection pools are kept for reuse. */
const MAX_POOLS = 32;
const CONNECTIONS_PER_POOL = 4;
const KEEP_ALIVE_MS = 4_000;

/**
 * Request headers the caller may not set: they are connection-level, or the client owns them
 * (Host must match the checked URL). They are dropped silently.
 */
const OWNED_HEADERS: ReadonlySet<string> = new Set(CONNECTION_HEADERS);

const RETRYABLE_STATUS: ReadonlySet<number> = new Set([408, 425, 429]);

const TIMEOUT_CODES: ReadonlySet<string> = new Set([
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "ETIMEDOUT",
]);

class AttemptTimeout extends Error {
  constructor() {
    super("attempt timed out");
    this.name = "AttemptTimeout";
  }
}

function sanitizeHeaders(headers: Record<string, string>, body: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (OWNED_HEADERS.has(lower)) continue;
    out[lower] = value;
  }
  out["content-type"] ??= "application/json";
  out["user-agent"] ??= "openwop-a2a-host-push/1";
  out["content-length"] = String(Buffer.byteLength(body));
  return out;
}

/** Read at most `cap` bytes of the body and discard them; stop early (destroying the stream) past the cap. */
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

function classifyStatus(status: number): { ok: boolean; retryable: boolean; error?: string } {
  if (status >= 200 && status < 300) return { ok: true, retryable: false };
  if (status >= 300 && status < 400) {
    return { ok: false, retryable: false, error: `redirect refused (3xx): webhook answered ${status}` };
  }
  if (status >= 500 || RETRYABLE_STATUS.has(status)) {
    return { ok: false, retryable: true, error: `webhook answered ${status}` };
  }
  return { ok: false, retryable: false, error: `webhook answered ${status}` };
}

export function createPushHttpClient(opts: { policy: EgressPolicy; resolve?: Resolver }): PushHttpClient {
  const resolve = opts.resolve ?? defaultResolver;
  const pools = createPinnedPools({ maxPools: MAX_POOLS, connectionsPerPool: CONNECTIONS_PER_POOL, keepAliveMs: KEEP_ALIVE_MS, autoSelectFamily: true });
  const inflight = new Set<Promise<PushResult>>();
  let closed = false;

  async function attempt(req: PushRequest, signal: AbortSignal, started: number): Promise<PushResult> {
    const elapsed = (): number => Math.round(performance.now() - started);
    const remaining = (): number => Math.max(1, Math.ceil(req.timeoutMs - (performance.now() - started)));

    // 1. Delivery-time revalidation (one resolution through `resolve`), raced against the deadline.
    let checked: Awaited<ReturnType<typeof checkEgressUrl>>;
    try {
      checked = await raceAbort(checkEgressUrl(req.url, opts.policy, "push", resolve), signal);
    } catch (err) {
      if (err instanceof EgressRefusedError) return { ok: false, error: err.message, retryable: false, durationMs: elapsed() };
      if (err instanceof EgressResolutionError) return { ok: false, error: err.message, retryable: true, durationMs: elapsed() };
      if (err instanceof AttemptTimeout) {
        return { ok: false, error: `timeout after ${req.timeoutMs} ms (resolving the push URL host)`, retryable: true, durationMs: elapsed() };
      }
      return { ok: false, error: "push URL check failed (egress policy error)", retryable: false, durationMs: elapsed() };
    }
    if (closed) return { ok: false, error: "push client closed", retryable: true, durationMs: elapsed() };

    // 2. One POST over a connection pinned to the checked addresses.
    const entry = pools.acquire(checked.url, checked.addresses);
    let failed = false;
    try {
      let response: Dispatcher.ResponseData;
      try {
        response = await entry.pool.request({
          method: "POST",
          path: `${checked.url.pathname}${checked.url.search}`,
          headers: sanitizeHeaders(req.headers, req.body),
          body: req.body,
          signal,
          headersTimeout: remaining(),
          bodyTimeout: remaining(),
        });
      } catch (err) {
        failed = true;
        return { ...describeFailure(err, signal, req.timeoutMs), durationMs: elapsed() };
      }

      const { statusCode, headers, body } = response;
      // Destroying a body early makes undici emit an abort error on it; nobody else listens.
      body.on("error", ignore);
      if (statusCode === 101 || hasUpgradeToken(headers["connection"])) {
        failed = true;
        body.destroy();
        return { ok: false, status: statusCode, error: "webhook answered with Connection: upgrade (refused)", retryable: false, durationMs: elapsed() };
      }
      // The outcome is decided by the status; the body is only drained (capped) so the connection
      // can be reused, and abandoned at the deadline or past the cap.
      await drainCapped(body, req.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
      const verdict = classifyStatus(statusCode);
      return { ...verdict, status: statusCode, durationMs: elapsed() };
    } finally {
      pools.release(entry, failed);
    }
  }

  return {
    async post(req: PushRequest): Promise<PushResult> {
      if (!Number.isFinite(req.timeoutMs) || req.timeoutMs <= 0) throw new RangeError("timeoutMs must be a positive number");
      if (req.maxResponseBytes !== undefined && (!Number.isInteger(req.maxResponseBytes) || req.maxResponseBytes < 0)) {
        throw new RangeError("maxResponseBytes must be a non-negative integer");
      }
      const started = performance.now();
      if (closed) return { ok: false, error: "push client closed", retryable: true, durationMs: 0 };
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(new AttemptTimeout()), req.timeoutMs);
      const run = attempt(req, controller.signal, started).finally(() => clearTimeout(timer));
      inflight.add(run);
      try {
        return await run;
      } finally {
        inflight.delete(run);
      }
    },

    /** Stop accepting posts, let in-flight posts finish (each is bounded by its own timeout), then drop all connections. */
    async close(): Promise<void> {
      closed = true;
      await Promise.allSettled([...inflight]);
      await pools.destroyAll();
    },
  };
}

function ignore(): void {}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new AttemptTimeout());
  return new Promise<T>((resolvePromise, reject) => {
    const onAbort = (): void => reject(new AttemptTimeout());
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

/** Map a request failure to a result without echoing error messages (which may name headers or URLs). */
function describeFailure(err: unknown, signal: AbortSignal, timeoutMs: number): Omit<PushResult, "durationMs"> {
  const code = errorCode(err);
  if (signal.aborted || (code !== undefined && TIMEOUT_CODES.has(code))) {
    return { ok: false, error: `timeout after ${timeoutMs} ms${code ? ` (${code})` : ""}`, retryable: true };
  }
  if (code === "UND_ERR_SOCKET" && (err as Error).message === "bad upgrade") {
    return { ok: false, error: "webhook answered with Connection: upgrade (refused)", retryable: false };
  }
  if (code === "UND_ERR_INVALID_ARG" || code === "ERR_INVALID_CHAR" || code === "ERR_INVALID_HTTP_TOKEN") {
    return { ok: false, error: "invalid push request (a header name or value was rejected)", retryable: false };
  }
  if (code !== undefined && /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(code)) {
    return { ok: false, error: `TLS error (${code})`, retryable: true };
  }
  return { ok: false, error: `connection error${code ? ` (${code})` : ""}`, retryable: true };
}
