/**
 * The one domain error type. Every transport maps `code` to its own wire code in one table
 * (`src/transport/error-codes.ts`). `message` is safe to show a caller; internal causes stay in `cause`
 * and are only logged.
 */
export const ERROR_CODES = [
  "parse-error",
  "invalid-request",
  "method-not-found",
  "invalid-params",
  "internal",
  "task-not-found",
  "task-not-cancelable",
  "push-not-supported",
  "unsupported-operation",
  "content-type-not-supported",
  // The request's HTTP Content-Type is not one the binding reads (HTTP 415); A2A's ContentTypeNotSupported
  // above is about the content (part media types), which the A2A 1.0 table answers with 400.
  "unsupported-media-type",
  "invalid-agent-response",
  "extended-card-not-configured",
  "version-not-supported",
  // The A2A 1.1 draft's TaskGenerationMismatchError: `ifGenerationMatch` named another generation than the task's.
  "generation-mismatch",
  "unauthenticated",
  "permission-denied",
  "not-found",
  // No HTTP route for the request's method and path (an unknown URL): HTTP 404, not an A2A TaskNotFound.
  "route-not-found",
  "method-not-allowed",
  "conflict",
  "gone",
  "payload-too-large",
  // One message, artifact or task over its stored-size cap (MAX_MESSAGE_BYTES & co.): invalid params, 413 on HTTP.
  "content-too-large",
  // The store (or another dependency) is down or stalled: retryable (UNAVAILABLE, 503 + Retry-After).
  "unavailable",
  // A tenant (or key) over one of its limits (TENANT_LIMITS), or an instance shedding new tasks under overload:
  // 429 / RESOURCE_EXHAUSTED, retryable after `details.retryAfterSeconds` (Retry-After, RetryInfo).
  "rate-limited",
  // The caller's deadline (grpc-timeout, connect-timeout-ms) passed first: retryable (DEADLINE_EXCEEDED, 504).
  "deadline-exceeded",
  // OpenWOP REST domain codes (interrupt.md, rest-endpoints.md).
  "interrupt-not-found",
  "interrupt-already-resolved",
  "interrupt-expired",
  "idempotency-conflict",
  // Steering (runs.md "Pause and resume"): the run's status does not allow the action (details.runStatus)...
  "run-state-conflict",
  // ...or the run has finished (OpenWOP's run_terminal).
  "run-terminal",
  // The host as an A2A client (the invoke seam): no A2A version both sides speak, or the peer's call failed.
  "interop-version-unsupported",
  "external-call-failed",
  // OpenWOP v2 (versioning.md §1.3, identity.md §5 and §2.2): the OpenWOP-Version header names a major this host
  // does not serve, or a /v1 path carries a v2 header; a tenant-bound id names another tenant; a token outlives
  // the lifetime bound its lane advertises.
  "protocol-version-unsupported",
  "protocol-version-mismatch",
  "client-version-unsupported",
  "id-tenant-mismatch",
  "credential-lifetime-exceeded",
  // An SSE `streamMode` the host does not serve (OpenWOP v2 events.md).
  "unsupported-stream-mode",
  // A tenant (or key) over one of its TENANT_LIMITS: retryable after `details.retryAfterSeconds` (429, RESOURCE_EXHAUSTED).
  "rate-limited",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class DomainError extends Error {
  override readonly name = "DomainError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function taskNotFound(taskId: string): DomainError {
  return new DomainError("task-not-found", `Task not found: ${taskId}`, { taskId });
}

export function invalidParams(message: string, details?: Record<string, unknown>): DomainError {
  return new DomainError("invalid-params", message, details);
}

/** Anything that is not a DomainError becomes `internal`, keeping the original as the cause. */
export function toDomainError(err: unknown): DomainError {
  if (err instanceof DomainError) return err;
  return new DomainError("internal", "Internal error", undefined, { cause: err });
}

/**
 * A refusal by a tenant limit (TENANT_LIMITS): `limit` names which, `retryAfterSeconds` when to try again. A limit
 * of 0 says so, since no wait will help.
 */
export function rateLimited(limit: string, allowed: number, retryAfterSeconds: number): DomainError {
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
  const message =
    allowed === 0
      ? `This tenant is allowed no ${limit} (its ${limit} limit is 0); ask the operator to raise it`
      : `Over this tenant's ${limit} limit of ${allowed}; retry after ${seconds} s`;
  return new DomainError("rate-limited", message, { limit, allowed, retryAfterSeconds: seconds });
}
