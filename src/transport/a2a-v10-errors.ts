import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";
import { toDomainError, type DomainError } from "../domain/errors.js";
import type { Logger } from "../observability/logger.js";
import { CONNECT_CODE } from "./connect/connect-errors.js";
import { WIRE_CODES } from "./error-codes.js";
import type { JsonRpcErrorResponse, JsonRpcId } from "./jsonrpc/jsonrpc-errors.js";

/**
 * The A2A 1.0 error shapes (spec §5.4 / §11.6), one per binding, all carrying a `google.rpc.ErrorInfo`
 * (`reason` UPPER_SNAKE, `domain` "a2a-protocol.org", string `metadata`) so SDK clients raise typed errors:
 * - JSON-RPC: `error.data` is an array holding the ErrorInfo (with its `@type`);
 * - gRPC / Connect / gRPC-Web: the status details (`grpc-status-details-bin` / Connect `details`);
 * - HTTP+JSON: `{"error": {code, status, message, details: [ErrorInfo]}}` (google.rpc.Status).
 * Codes, statuses and reasons come from the one table (`WIRE_CODES`).
 */

export const ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo";
export const A2A_ERROR_DOMAIN = "a2a-protocol.org";
/** Reasons of our own (not defined by A2A) carry this domain instead. */
export const HOST_ERROR_DOMAIN = "openwop.dev";

/** The reasons A2A defines (spec §5.4, a2a-js `A2A_ERROR_SPECS`); the rest of the table's reasons are ours. */
const A2A_REASONS: ReadonlySet<string> = new Set([
  "TASK_NOT_FOUND",
  "TASK_NOT_CANCELABLE",
  "PUSH_NOTIFICATION_NOT_SUPPORTED",
  "UNSUPPORTED_OPERATION",
  "CONTENT_TYPE_NOT_SUPPORTED",
  "INVALID_AGENT_RESPONSE",
  "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
  "EXTENSION_SUPPORT_REQUIRED",
  "VERSION_NOT_SUPPORTED",
  "INVALID_PARAMS",
]);

export interface ErrorInfo {
  "@type": typeof ERROR_INFO_TYPE;
  reason: string;
  domain: string;
  metadata?: Record<string, string>;
}

export function reasonOf(err: DomainError): string {
  return WIRE_CODES[err.code].reason ?? err.code.toUpperCase().replace(/-/g, "_");
}

/** ErrorInfo.metadata is map<string, string>: scalar details as text, structured ones as JSON. */
function metadataOf(details: Record<string, unknown> | undefined): Record<string, string> | undefined {
  if (!details) return undefined;
  const entries = Object.entries(details)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)] as const);
  return entries.length > 0 ? Object.fromEntries(entries) : undefined;
}

export function errorInfoOf(err: unknown): ErrorInfo {
  const domain = toDomainError(err);
  const reason = reasonOf(domain);
  const metadata = metadataOf(domain.details);
  return { "@type": ERROR_INFO_TYPE, reason, domain: A2A_REASONS.has(reason) ? A2A_ERROR_DOMAIN : HOST_ERROR_DOMAIN, ...(metadata ? { metadata } : {}) };
}

/** JSON-RPC 2.0 error response in the 1.0 shape. */
export function jsonRpcErrorV10(id: JsonRpcId, err: unknown): JsonRpcErrorResponse {
  const domain = toDomainError(err);
  return { jsonrpc: "2.0", id, error: { code: WIRE_CODES[domain.code].jsonRpc, message: domain.message, data: [errorInfoOf(domain)] } };
}

export interface RestErrorV10 {
  status: number;
  body: { error: { code: number; status: string; message: string; details: ErrorInfo[] } };
}

/** HTTP+JSON error in the 1.0 shape (google.rpc.Status as JSON) and its HTTP status. */
export function restErrorV10(err: unknown): RestErrorV10 {
  const domain = toDomainError(err);
  const codes = WIRE_CODES[domain.code];
  const status = codes.http10 ?? codes.http;
  return { status, body: { error: { code: status, status: codes.grpc10 ?? codes.grpc, message: domain.message, details: [errorInfoOf(domain)] } } };
}

/** ErrorInfo in protobuf binary (reason = 1, domain = 2, metadata = 3 as map<string, string>). */
export function encodeErrorInfo(info: ErrorInfo): Uint8Array {
  const writer = new BinaryWriter();
  writer.tag(1, WireType.LengthDelimited).string(info.reason);
  writer.tag(2, WireType.LengthDelimited).string(info.domain);
  for (const [key, value] of Object.entries(info.metadata ?? {})) {
    writer.tag(3, WireType.LengthDelimited).fork();
    writer.tag(1, WireType.LengthDelimited).string(key);
    writer.tag(2, WireType.LengthDelimited).string(value);
    writer.join();
  }
  return writer.finish();
}

/**
 * A handler error as the ConnectError a 1.0 caller sees: the status from the table, and the ErrorInfo as a
 * status detail (`google.rpc.ErrorInfo`). ConnectErrors raised by the framework itself (cancellation,
 * deadline) pass through; anything that is not a DomainError is logged and answers a bare "Internal error".
 */
export function connectErrorV10(err: unknown, logger: Logger, rpc: string): ConnectError {
  if (err instanceof ConnectError) return err;
  const domain = toDomainError(err);
  if (domain.code === "internal") logger.error({ err: domain.cause ?? err, rpc }, "RPC failed");
  const codes = WIRE_CODES[domain.code];
  const error = new ConnectError(domain.message, CONNECT_CODE[codes.grpc10 ?? codes.grpc] ?? Code.Unknown);
  const info = errorInfoOf(domain);
  const { "@type": _type, ...debug } = info;
  error.details.push({ type: "google.rpc.ErrorInfo", value: encodeErrorInfo(info), debug });
  return error;
}
