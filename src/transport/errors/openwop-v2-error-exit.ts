import { toDomainError, type ErrorCode } from "../../domain/errors.js";
import { sendJson, type HttpResponse } from "../http-io.js";
import { statusHeaders } from "./wire-error.js";

/**
 * The OpenWOP v2 REST error table: every domain code to a code of the v2 registry and its registered status
 * (spec/v2/core/errors.md, "Codes by HTTP status", the Stable text; spec/v2/errors.json; `rate_limited` 429 and
 * "Retry timing" read at openwop/openwop cc7bb617f49000f7ec9c94eef0fe0d18a2a6901a). v1 keeps its column in
 * error-codes.ts. Where v1 answered with a code the v2 registry does not hold, the nearest registered code stands.
 */
export const OPENWOP_V2_CODES: Record<ErrorCode, { http: number; error: string }> = {
  "parse-error": { http: 400, error: "validation_error" },
  "invalid-request": { http: 400, error: "validation_error" },
  "invalid-params": { http: 400, error: "validation_error" },
  "content-type-not-supported": { http: 400, error: "validation_error" },
  "version-not-supported": { http: 400, error: "validation_error" },
  "method-not-found": { http: 404, error: "not_found" },
  internal: { http: 500, error: "internal_error" },
  "task-not-found": { http: 404, error: "not_found" },
  "not-found": { http: 404, error: "not_found" },
  "route-not-found": { http: 404, error: "not_found" },
  // The registry holds no 405: a method the path does not serve is an operation that does not exist (with Allow).
  "method-not-allowed": { http: 404, error: "not_found" },
  // errors.md "Unadvertised operations": 404 not_found.
  "push-not-supported": { http: 404, error: "not_found" },
  "extended-card-not-configured": { http: 404, error: "not_found" },
  "task-not-cancelable": { http: 409, error: "run_terminal" },
  "run-terminal": { http: 409, error: "run_terminal" },
  "run-state-conflict": { http: 409, error: "run_state_conflict" },
  "unsupported-operation": { http: 409, error: "run_state_conflict" },
  "unsupported-media-type": { http: 415, error: "unsupported_media_type" },
  "invalid-agent-response": { http: 502, error: "upstream_unavailable" },
  "external-call-failed": { http: 502, error: "upstream_unavailable" },
  "generation-mismatch": { http: 409, error: "version_conflict" },
  conflict: { http: 409, error: "version_conflict" },
  unauthenticated: { http: 401, error: "unauthenticated" },
  "credential-lifetime-exceeded": { http: 401, error: "credential_lifetime_exceeded" },
  "permission-denied": { http: 403, error: "forbidden" },
  "id-tenant-mismatch": { http: 403, error: "id_tenant_mismatch" },
  gone: { http: 410, error: "run_expired" },
  "payload-too-large": { http: 413, error: "payload_too_large" },
  "content-too-large": { http: 413, error: "payload_too_large" },
  unavailable: { http: 503, error: "service_unavailable" },
  // The registry's 429 (spec/v2/core/errors.md at openwop/openwop cc7bb617f49000f7ec9c94eef0fe0d18a2a6901a).
  "rate-limited": { http: 429, error: "rate_limited" },
  "deadline-exceeded": { http: 503, error: "service_unavailable" },
  "interrupt-not-found": { http: 404, error: "interrupt_not_found" },
  "interrupt-already-resolved": { http: 409, error: "interrupt_already_resolved" },
  "interrupt-expired": { http: 410, error: "interrupt_expired" },
  "idempotency-conflict": { http: 409, error: "idempotency_key_mismatch" },
  "interop-version-unsupported": { http: 400, error: "interop_version_unsupported" },
  "protocol-version-unsupported": { http: 406, error: "protocol_version_unsupported" },
  "protocol-version-mismatch": { http: 400, error: "protocol_version_mismatch" },
  "client-version-unsupported": { http: 426, error: "client_version_unsupported" },
  "unsupported-stream-mode": { http: 400, error: "unsupported_stream_mode" },
};

/** The v2 envelope `{error, message, details?}` (closed), with its registered status. */
export function openwopV2ErrorBody(err: unknown): {
  status: number;
  body: { error: string; message: string; details?: Record<string, unknown> };
} {
  const domain = toDomainError(err);
  const row = OPENWOP_V2_CODES[domain.code];
  // errors.md "Retry timing": the retry time is the Retry-After header's alone; v2 bodies never carry it.
  const details =
    domain.details && "retryAfterSeconds" in domain.details ? withoutRetry(domain.details) : domain.details;
  return {
    status: row.http,
    body: { error: row.error, message: domain.message, ...(details ? { details } : {}) },
  };
}

function withoutRetry(details: Record<string, unknown>): Record<string, unknown> | undefined {
  const { retryAfterSeconds: _inTheHeader, ...rest } = details;
  return Object.keys(rest).length > 0 ? rest : undefined;
}

export function sendOpenwopV2Error(res: HttpResponse, err: unknown, headers: Record<string, string> = {}): void {
  const { status, body } = openwopV2ErrorBody(err);
  sendJson(res, status, body, { ...statusHeaders(status, toDomainError(err)), ...headers });
}
