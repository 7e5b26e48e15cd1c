/**
 * Push-notification delivery: one POST per attempt over the one outbound client (egress/egress-http-client.ts)
 * with the push policy. Every post re-runs the egress guard (delivery-time revalidation against DNS rebinding) and
 * connects only to the addresses it checked; redirects are never followed (a 3xx is a failed attempt),
 * `Connection: upgrade` answers are refused, the whole attempt (DNS, connect, headers, body) runs under one
 * timeout, and at most `maxResponseBytes` of the response body are read and discarded.
 *
 * What this adds: the headers a caller may not set are dropped, and every outcome is a PushResult (the status
 * decides; failures say whether a retry may help). Header values carry tokens: they are never logged and never
 * appear in a PushResult.
 */
import { createEgressHttpClient, EgressCallError } from "../egress/egress-http-client.js";
import type { EgressPolicy, Resolver } from "../egress/egress-guard.js";
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

/**
 * Request headers the caller may not set: they are connection-level, or the client owns them
 * (Host must match the checked URL). They are dropped silently.
 */
const OWNED_HEADERS: ReadonlySet<string> = new Set(CONNECTION_HEADERS);

const RETRYABLE_STATUS: ReadonlySet<number> = new Set([408, 425, 429]);

function sanitizeHeaders(headers: Record<string, string>, body: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (OWNED_HEADERS.has(lower)) continue;
    out[lower] = value;
  }
  out["content-type"] ??= "application/json";
  out["content-length"] = String(Buffer.byteLength(body));
  return out;
}

function classifyStatus(status: number): { ok: boolean; retryable: boolean; error?: string } {
  if (status >= 200 && status < 300) return { ok: true, retryable: false };
  if (status >= 500 || RETRYABLE_STATUS.has(status)) {
    return { ok: false, retryable: true, error: `webhook answered ${status}` };
  }
  return { ok: false, retryable: false, error: `webhook answered ${status}` };
}

export function createPushHttpClient(opts: { policy: EgressPolicy; resolve?: Resolver }): PushHttpClient {
  const egress = createEgressHttpClient({
    policy: opts.policy,
    subject: "push",
    userAgent: "openwop-a2a-host-push/1",
    maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
    maxPools: MAX_POOLS,
    autoSelectFamily: true,
    ...(opts.resolve ? { resolve: opts.resolve } : {}),
  });
  const inflight = new Set<Promise<PushResult>>();
  let closed = false;

  async function attempt(req: PushRequest, started: number): Promise<PushResult> {
    const elapsed = (): number => Math.round(performance.now() - started);
    try {
      const answer = await egress.request({
        method: "POST",
        url: req.url,
        headers: sanitizeHeaders(req.headers, req.body),
        body: req.body,
        timeoutMs: req.timeoutMs,
        returnErrorStatus: true,
        // The outcome is decided by the status; the body is only drained (capped) so the connection can be reused.
        discardBody: true,
        ...(req.maxResponseBytes !== undefined ? { maxResponseBytes: req.maxResponseBytes } : {}),
      });
      return { ...classifyStatus(answer.status), status: answer.status, durationMs: elapsed() };
    } catch (err) {
      return { ...describeFailure(err, req.timeoutMs, closed), durationMs: elapsed() };
    }
  }

  return {
    async post(req: PushRequest): Promise<PushResult> {
      if (!Number.isFinite(req.timeoutMs) || req.timeoutMs <= 0)
        throw new RangeError("timeoutMs must be a positive number");
      if (req.maxResponseBytes !== undefined && (!Number.isInteger(req.maxResponseBytes) || req.maxResponseBytes < 0)) {
        throw new RangeError("maxResponseBytes must be a non-negative integer");
      }
      if (closed) return { ok: false, error: "push client closed", retryable: true, durationMs: 0 };
      const run = attempt(req, performance.now());
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
      await egress.close();
    },
  };
}

/** A failed attempt as a result, in the push vocabulary, without echoing error messages (which may name headers or URLs). */
function describeFailure(err: unknown, timeoutMs: number, closed: boolean): Omit<PushResult, "durationMs"> {
  if (!(err instanceof EgressCallError)) return { ok: false, error: "connection error", retryable: true };
  const { code, httpStatus, guard, resolving, upgrade } = err.detail;
  switch (err.kind) {
    case "egress":
    case "resolution":
      return {
        ok: false,
        error: guard?.message ?? "push URL check failed (egress policy error)",
        retryable: err.kind === "resolution",
      };
    case "timeout":
      return {
        ok: false,
        error: `timeout after ${timeoutMs} ms${code ? ` (${code})` : resolving ? " (resolving the push URL host)" : ""}`,
        retryable: true,
      };
    case "http":
      // Only redirects get here (the status of any other answer is the outcome).
      return {
        ok: false,
        ...(httpStatus !== undefined ? { status: httpStatus } : {}),
        error: `redirect refused (3xx): webhook answered ${httpStatus}`,
        retryable: false,
      };
    case "protocol":
      if (upgrade)
        return {
          ok: false,
          ...(httpStatus !== undefined ? { status: httpStatus } : {}),
          error: "webhook answered with Connection: upgrade (refused)",
          retryable: false,
        };
      return { ok: false, error: "webhook answer refused", retryable: false };
    case "invalid-request":
      return { ok: false, error: "invalid push request (a header name or value was rejected)", retryable: false };
    case "aborted":
      return { ok: false, error: closed ? "push client closed" : "push attempt abandoned", retryable: true };
    case "connection":
      if (code !== undefined && /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(code))
        return { ok: false, error: `TLS error (${code})`, retryable: true };
      return { ok: false, error: `connection error${code ? ` (${code})` : ""}`, retryable: true };
  }
}
