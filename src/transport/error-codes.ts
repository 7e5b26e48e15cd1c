import type { GrpcStatusName, VersionStatusColumn } from "../a2a/version-module.js";
import type { ErrorCode } from "../domain/errors.js";

/**
 * The one mapping from domain error codes to each transport's code (A2A 1.0 §5.4 table, used for 0.3 too,
 * and the OpenWOP REST envelope's canonical codes). Every transport reads its column from here. The A2A
 * statuses have a column per registered version: the shared row below, with the version module's own
 * statuses (`errors.statuses`, e.g. src/a2a/v10/v10-errors.ts) where its spec differs (`statusesOf`).
 */
export interface WireCodes {
  jsonRpc: number;
  /** gRPC / Connect status name (the shared row follows a2a-js 0.3). */
  grpc: GrpcStatusName;
  http: number;
  /** OpenWOP REST error envelope `error` value. */
  rest: string;
  /**
   * A2A 1.0 `google.rpc.ErrorInfo.reason` (JSON-RPC `error.data[]`, gRPC status details, REST `error.details[]`).
   * Default: the code in UPPER_SNAKE (`idempotency-conflict` → `IDEMPOTENCY_CONFLICT`); the A2A-defined reasons
   * (spec §5.4) are spelled out below and carry the domain `a2a-protocol.org`.
   */
  reason?: string;
  /**
   * Who may call, not what was asked: answered on its HTTP status on every HTTP binding, JSON-RPC included
   * (A2A leaves authentication and authorization to HTTP: 401 / 403 with the challenge), where other
   * JSON-RPC errors ride on 200.
   */
  refusal?: true;
}

/** The HTTP and gRPC statuses of `code` in a version's column: the version's own where it has one, else the shared row. */
export function statusesOf(code: ErrorCode, column: VersionStatusColumn): { http: number; grpc: GrpcStatusName } {
  const row = WIRE_CODES[code];
  const own = column[code];
  return { http: own?.http ?? row.http, grpc: own?.grpc ?? row.grpc };
}

export const WIRE_CODES: Record<ErrorCode, WireCodes> = {
  "parse-error": {
    jsonRpc: -32700,
    grpc: "INVALID_ARGUMENT",
    http: 400,
    rest: "validation_error",
    reason: "INVALID_PARAMS",
  },
  "invalid-request": {
    jsonRpc: -32600,
    grpc: "INVALID_ARGUMENT",
    http: 400,
    rest: "validation_error",
    reason: "INVALID_PARAMS",
  },
  "method-not-found": { jsonRpc: -32601, grpc: "UNIMPLEMENTED", http: 404, rest: "not_found" },
  "invalid-params": {
    jsonRpc: -32602,
    grpc: "INVALID_ARGUMENT",
    http: 400,
    rest: "validation_error",
    reason: "INVALID_PARAMS",
  },
  internal: { jsonRpc: -32603, grpc: "INTERNAL", http: 500, rest: "internal_error", reason: "INTERNAL_ERROR" },
  "task-not-found": { jsonRpc: -32001, grpc: "NOT_FOUND", http: 404, rest: "not_found", reason: "TASK_NOT_FOUND" },
  "task-not-cancelable": {
    jsonRpc: -32002,
    grpc: "FAILED_PRECONDITION",
    http: 409,
    rest: "run_terminal",
    reason: "TASK_NOT_CANCELABLE",
  },
  "push-not-supported": {
    jsonRpc: -32003,
    grpc: "UNIMPLEMENTED",
    http: 501,
    rest: "not_implemented",
    reason: "PUSH_NOTIFICATION_NOT_SUPPORTED",
  },
  "unsupported-operation": {
    jsonRpc: -32004,
    grpc: "FAILED_PRECONDITION",
    http: 400,
    rest: "unsupported_operation",
    reason: "UNSUPPORTED_OPERATION",
  },
  "content-type-not-supported": {
    jsonRpc: -32005,
    grpc: "INVALID_ARGUMENT",
    http: 400,
    rest: "validation_error",
    reason: "CONTENT_TYPE_NOT_SUPPORTED",
  },
  // A Content-Type header the binding does not read: 415 on every HTTP binding (RFC 9110 §15.5.16), the
  // JSON-RPC body says invalid request. Not A2A's ContentTypeNotSupported (the row above), which is about parts.
  "unsupported-media-type": { jsonRpc: -32600, grpc: "INVALID_ARGUMENT", http: 415, rest: "unsupported_media_type" },
  "invalid-agent-response": {
    jsonRpc: -32006,
    grpc: "INTERNAL",
    http: 502,
    rest: "invalid_agent_response",
    reason: "INVALID_AGENT_RESPONSE",
  },
  "extended-card-not-configured": {
    jsonRpc: -32007,
    grpc: "FAILED_PRECONDITION",
    http: 400,
    rest: "not_configured",
    reason: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
  },
  "version-not-supported": {
    jsonRpc: -32009,
    grpc: "FAILED_PRECONDITION",
    http: 400,
    rest: "version_not_supported",
    reason: "VERSION_NOT_SUPPORTED",
  },
  "generation-mismatch": {
    jsonRpc: -32010,
    grpc: "ABORTED",
    http: 409,
    rest: "generation_mismatch",
    reason: "TASK_GENERATION_MISMATCH",
  },
  unauthenticated: { jsonRpc: -32600, grpc: "UNAUTHENTICATED", http: 401, rest: "unauthenticated", refusal: true },
  "permission-denied": { jsonRpc: -32600, grpc: "PERMISSION_DENIED", http: 403, rest: "forbidden", refusal: true },
  "not-found": { jsonRpc: -32001, grpc: "NOT_FOUND", http: 404, rest: "not_found", reason: "TASK_NOT_FOUND" },
  // An unknown URL: google.rpc NOT_FOUND / HTTP 404 with a reason of its own (ROUTE_NOT_FOUND, domain
  // openwop.dev), so no caller mistakes a mistyped path for a missing task. JSON-RPC never routes by path.
  "route-not-found": { jsonRpc: -32601, grpc: "NOT_FOUND", http: 404, rest: "not_found" },
  "method-not-allowed": { jsonRpc: -32600, grpc: "UNIMPLEMENTED", http: 405, rest: "method_not_allowed" },
  conflict: { jsonRpc: -32603, grpc: "ABORTED", http: 409, rest: "conflict" },
  gone: { jsonRpc: -32001, grpc: "NOT_FOUND", http: 410, rest: "gone", reason: "TASK_NOT_FOUND" },
  "payload-too-large": { jsonRpc: -32600, grpc: "RESOURCE_EXHAUSTED", http: 413, rest: "payload_too_large" },
  "content-too-large": {
    jsonRpc: -32602,
    grpc: "INVALID_ARGUMENT",
    http: 413,
    rest: "payload_too_large",
    reason: "INVALID_PARAMS",
  },
  // A2A defines no JSON-RPC code for either: Internal error, with `data` saying it is retryable ({retryable: true}
  // on 0.3, ErrorInfo reason UNAVAILABLE / DEADLINE_EXCEEDED with metadata retryable=true on 1.0). HTTP 503
  // carries Retry-After; 504 is the gateway-timeout answer HTTP clients retry.
  unavailable: { jsonRpc: -32603, grpc: "UNAVAILABLE", http: 503, rest: "unavailable" },
  // A limit of TENANT_LIMITS, or new tasks shed under overload. A2A defines no JSON-RPC code for it: -32029 in the
  // server-error range (429), with the retry time in \`data\`; answered on its HTTP status (429 + Retry-After) on
  // every HTTP binding, JSON-RPC included, as a refusal of who calls. OpenWOP's code: rate_limited (v1 and v2).
  "rate-limited": {
    jsonRpc: -32029,
    grpc: "RESOURCE_EXHAUSTED",
    http: 429,
    rest: "rate_limited",
    reason: "RATE_LIMITED",
    refusal: true,
  },
  "deadline-exceeded": { jsonRpc: -32603, grpc: "DEADLINE_EXCEEDED", http: 504, rest: "deadline_exceeded" },
  "interrupt-not-found": { jsonRpc: -32001, grpc: "NOT_FOUND", http: 404, rest: "interrupt_not_found" },
  "interrupt-already-resolved": {
    jsonRpc: -32004,
    grpc: "FAILED_PRECONDITION",
    http: 409,
    rest: "interrupt_already_resolved",
  },
  "interrupt-expired": { jsonRpc: -32004, grpc: "FAILED_PRECONDITION", http: 410, rest: "interrupt_expired" },
  "idempotency-conflict": { jsonRpc: -32602, grpc: "ALREADY_EXISTS", http: 409, rest: "idempotency_key_mismatch" },
  // A reply to a paused task, or a steering action the run's status refuses: A2A's UnsupportedOperation code.
  "run-state-conflict": {
    jsonRpc: -32004,
    grpc: "FAILED_PRECONDITION",
    http: 409,
    rest: "run_state_conflict",
    reason: "UNSUPPORTED_OPERATION",
  },
  "run-terminal": {
    jsonRpc: -32004,
    grpc: "FAILED_PRECONDITION",
    http: 409,
    rest: "run_terminal",
    reason: "UNSUPPORTED_OPERATION",
  },
  // Outbound (a2a.invoke through the invoke seam): OpenWOP's interop envelope codes; only the REST seam sends them.
  "interop-version-unsupported": {
    jsonRpc: -32009,
    grpc: "FAILED_PRECONDITION",
    http: 400,
    rest: "interop_version_unsupported",
  },
  "external-call-failed": { jsonRpc: -32603, grpc: "UNAVAILABLE", http: 502, rest: "external_call_failed" },
  // OpenWOP REST only (the header and the tenant-bound ids exist nowhere else); the other columns are never read.
  "protocol-version-unsupported": {
    jsonRpc: -32600,
    grpc: "FAILED_PRECONDITION",
    http: 406,
    rest: "protocol_version_unsupported",
  },
  "protocol-version-mismatch": {
    jsonRpc: -32600,
    grpc: "INVALID_ARGUMENT",
    http: 400,
    rest: "protocol_version_mismatch",
  },
  "client-version-unsupported": {
    jsonRpc: -32600,
    grpc: "FAILED_PRECONDITION",
    http: 426,
    rest: "client_version_unsupported",
  },
  "id-tenant-mismatch": { jsonRpc: -32600, grpc: "PERMISSION_DENIED", http: 403, rest: "id_tenant_mismatch" },
  "unsupported-stream-mode": {
    jsonRpc: -32602,
    grpc: "INVALID_ARGUMENT",
    http: 400,
    rest: "unsupported_stream_mode",
  },
  // A token over its issuer's lifetime bound: a 401 on every binding (v1 REST keeps its `unauthenticated` code).
  "credential-lifetime-exceeded": {
    jsonRpc: -32600,
    grpc: "UNAUTHENTICATED",
    http: 401,
    rest: "unauthenticated",
    reason: "UNAUTHENTICATED",
    refusal: true,
  },
};
