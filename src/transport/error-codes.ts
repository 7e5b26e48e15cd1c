import type { ErrorCode } from "../domain/errors.js";

/**
 * The one mapping from domain error codes to each transport's code (A2A 1.0 §5.4 table, used for 0.3 too,
 * and the OpenWOP REST envelope's canonical codes). Every transport reads its column from here.
 */
export interface WireCodes {
  jsonRpc: number;
  /** gRPC / Connect status name. */
  grpc: "INVALID_ARGUMENT" | "NOT_FOUND" | "FAILED_PRECONDITION" | "UNIMPLEMENTED" | "INTERNAL" | "UNAUTHENTICATED" | "PERMISSION_DENIED" | "ALREADY_EXISTS" | "ABORTED" | "RESOURCE_EXHAUSTED" | "UNAVAILABLE";
  http: number;
  /** OpenWOP REST error envelope `error` value. */
  rest: string;
}

export const WIRE_CODES: Record<ErrorCode, WireCodes> = {
  "parse-error": { jsonRpc: -32700, grpc: "INVALID_ARGUMENT", http: 400, rest: "validation_error" },
  "invalid-request": { jsonRpc: -32600, grpc: "INVALID_ARGUMENT", http: 400, rest: "validation_error" },
  "method-not-found": { jsonRpc: -32601, grpc: "UNIMPLEMENTED", http: 404, rest: "not_found" },
  "invalid-params": { jsonRpc: -32602, grpc: "INVALID_ARGUMENT", http: 400, rest: "validation_error" },
  internal: { jsonRpc: -32603, grpc: "INTERNAL", http: 500, rest: "internal_error" },
  "task-not-found": { jsonRpc: -32001, grpc: "NOT_FOUND", http: 404, rest: "not_found" },
  "task-not-cancelable": { jsonRpc: -32002, grpc: "FAILED_PRECONDITION", http: 409, rest: "run_terminal" },
  "push-not-supported": { jsonRpc: -32003, grpc: "UNIMPLEMENTED", http: 501, rest: "not_implemented" },
  "unsupported-operation": { jsonRpc: -32004, grpc: "FAILED_PRECONDITION", http: 400, rest: "unsupported_operation" },
  "content-type-not-supported": { jsonRpc: -32005, grpc: "INVALID_ARGUMENT", http: 415, rest: "unsupported_media_type" },
  "invalid-agent-response": { jsonRpc: -32006, grpc: "INTERNAL", http: 502, rest: "invalid_agent_response" },
  "extended-card-not-configured": { jsonRpc: -32007, grpc: "FAILED_PRECONDITION", http: 400, rest: "not_configured" },
  "version-not-supported": { jsonRpc: -32009, grpc: "FAILED_PRECONDITION", http: 400, rest: "version_not_supported" },
  unauthenticated: { jsonRpc: -32600, grpc: "UNAUTHENTICATED", http: 401, rest: "unauthenticated" },
  "permission-denied": { jsonRpc: -32600, grpc: "PERMISSION_DENIED", http: 403, rest: "forbidden" },
  "not-found": { jsonRpc: -32001, grpc: "NOT_FOUND", http: 404, rest: "not_found" },
  conflict: { jsonRpc: -32603, grpc: "ABORTED", http: 409, rest: "conflict" },
  gone: { jsonRpc: -32001, grpc: "NOT_FOUND", http: 410, rest: "gone" },
  "payload-too-large": { jsonRpc: -32600, grpc: "RESOURCE_EXHAUSTED", http: 413, rest: "payload_too_large" },
  unavailable: { jsonRpc: -32603, grpc: "UNAVAILABLE", http: 503, rest: "unavailable" },
};
