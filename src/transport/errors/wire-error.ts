import { Code, ConnectError } from "@connectrpc/connect";
import type { A2AVersion } from "../../domain/a2a-version.js";
import type { WireError } from "../../a2a/version-module.js";
import { versionModule } from "../../a2a/versions.js";
import { DomainError, toDomainError } from "../../domain/errors.js";
import type { Logger } from "../../observability/logger.js";
import { statusesOf, WIRE_CODES } from "../error-codes.js";

/**
 * The one place that decides whether an error is internal and logs its cause: every binding's error exit
 * passes what it caught through here. The caller only ever sees the DomainError's code and message.
 */
export type ReportError = (err: unknown, where: Record<string, unknown>) => DomainError;

export function errorReporter(logger: Logger): ReportError {
  return (err, where) => {
    const domain = toDomainError(err);
    // The store out of reach: the caller reads "retry", the operator reads why.
    if (domain.code === "unavailable" && domain.cause !== undefined)
      logger.warn({ err: domain.cause, ...where }, "request answered unavailable");
    if (domain.code !== "internal") return domain;
    // A caller that reset or dropped its connection is not a fault of ours: debug, not error.
    if (isCallerGone(domain.cause ?? err)) logger.debug({ err: domain.cause ?? err, ...where }, "the caller went away");
    else logger.error({ err: domain.cause ?? err, ...where }, "request failed");
    return domain;
  };
}

/** Node's error codes for a connection or stream the peer reset, aborted or closed early (and ours for a caller gone). */
const CALLER_GONE_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "EPIPE",
  "ECONNABORTED",
  "ERR_STREAM_PREMATURE_CLOSE",
  "ERR_STREAM_DESTROYED",
  "ERR_HTTP2_STREAM_CANCEL",
  "ERR_HTTP2_INVALID_STREAM",
  "ERR_CALLER_GONE",
]);

/** Whether an error (or one of its causes) says the caller went away mid-request: a reset, a broken pipe, an aborted request. */
export function isCallerGone(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current !== null && typeof current === "object"; depth++) {
    if (current instanceof ConnectError && current.code === Code.Canceled) return true;
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && CALLER_GONE_CODES.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** A domain error with its row of the one table (`WIRE_CODES`), in the status column of `version`. */
export function wireErrorOf(err: unknown, version: A2AVersion): WireError {
  const domain = toDomainError(err);
  const codes = WIRE_CODES[domain.code];
  const statuses = statusesOf(domain.code, versionModule(version).errors.statuses);
  return {
    code: domain.code,
    message: domain.message,
    ...(domain.details ? { details: domain.details } : {}),
    jsonRpc: codes.jsonRpc,
    http: statuses.http,
    grpc: statuses.grpc,
    reason: codes.reason ?? domain.code.toUpperCase().replace(/-/g, "_"),
    ...(retryAfterSecondsOf(domain) !== undefined ? { retryAfterSeconds: retryAfterSecondsOf(domain) } : {}),
  };
}

/** The HTTP status a JSON-RPC error answers on: 200, but a refusal (401, 403) on its own, as on the other bindings. */
export function jsonRpcHttpStatus(err: DomainError, version: A2AVersion): number {
  return WIRE_CODES[err.code].refusal ? statusesOf(err.code, versionModule(version).errors.statuses).http : 200;
}

/** Seconds a 503 (store unavailable) asks HTTP callers to wait before retrying. */
export const RETRY_AFTER_SECONDS = 1;

/**
 * The headers an HTTP error answer carries by itself: `Retry-After` with the error's own retry time (a limit's
 * refusal, 429), else on 503 (RFC 9110 §10.2.3).
 */
export function statusHeaders(status: number, err?: unknown): Record<string, string> {
  const asked = retryAfterSecondsOf(err);
  if (asked !== undefined) return { "retry-after": String(asked) };
  return status === 503 ? { "retry-after": String(RETRY_AFTER_SECONDS) } : {};
}

/** The seconds an error asks the caller to wait before retrying (`details.retryAfterSeconds`), if it names them. */
export function retryAfterSecondsOf(err: unknown): number | undefined {
  const value = err instanceof DomainError ? err.details?.["retryAfterSeconds"] : undefined;
  return typeof value === "number" ? value : undefined;
}

/**
 * The same `Retry-After` for an error answered on an HTTP status of its own binding (a JSON-RPC error rides on
 * 200, a gRPC-Web status on 200): whenever the one table says 503 for it, the HTTP answer says when to retry.
 */
export function retryAfterOf(err: DomainError): Record<string, string> {
  return statusHeaders(WIRE_CODES[err.code].http, err);
}
