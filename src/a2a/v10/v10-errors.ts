import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import type { VersionErrorShapes, VersionStatusColumn, WireError } from "../version-module.js";
import { retryInfoJson, type RetryInfoJson } from "../retry-info.js";

/**
 * The A2A 1.0 error shapes (spec §5.4 / §11.6), one per binding, all carrying a `google.rpc.ErrorInfo`
 * (`reason` UPPER_SNAKE, `domain` "a2a-protocol.org", string `metadata`) so SDK clients raise typed errors:
 * - JSON-RPC: `error.data` is an array holding the ErrorInfo (with its `@type`);
 * - gRPC / Connect / gRPC-Web: the status details (`grpc-status-details-bin` / Connect `details`);
 * - HTTP+JSON: `{"error": {code, status, message, details: [ErrorInfo]}}` (google.rpc.Status).
 * A refusal that names a retry time (a limit's) also carries a `google.rpc.RetryInfo` after the ErrorInfo.
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

/** ErrorInfo.metadata is map<string, string>: scalar details as text, structured ones as JSON. */
function metadataOf(details: Record<string, unknown> | undefined): Record<string, string> | undefined {
  if (!details) return undefined;
  const entries = Object.entries(details)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)] as const);
  return entries.length > 0 ? Object.fromEntries(entries) : undefined;
}

export function errorInfoOf(err: WireError): ErrorInfo {
  const metadata = metadataOf(err.details);
  return {
    "@type": ERROR_INFO_TYPE,
    reason: err.reason,
    domain: A2A_REASONS.has(err.reason) ? A2A_ERROR_DOMAIN : HOST_ERROR_DOMAIN,
    ...(metadata ? { metadata } : {}),
  };
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

/** Where the A2A 1.0 §5.4 table answers other statuses than the shared row (which follows a2a-js 0.3). */
const V10_STATUSES: VersionStatusColumn = {
  "task-not-cancelable": { http: 400 },
  "push-not-supported": { http: 400, grpc: "FAILED_PRECONDITION" },
  "invalid-agent-response": { http: 500 },
  // 1.0 has no 410: a task gone for good answers as TASK_NOT_FOUND does (404).
  gone: { http: 404 },
};

/** The status details in their JSON form: the ErrorInfo, then a RetryInfo when the error names a retry time. */
function detailsOf(err: WireError): Array<ErrorInfo | RetryInfoJson> {
  const retry = retryInfoJson(err);
  return retry ? [errorInfoOf(err), retry] : [errorInfoOf(err)];
}

export const v10ErrorShapes: VersionErrorShapes = {
  statuses: V10_STATUSES,
  jsonRpc: (id, err) => ({
    jsonrpc: "2.0",
    id,
    error: { code: err.jsonRpc, message: err.message, data: detailsOf(err) },
  }),
  httpJson: (err) => ({
    error: { code: err.http, status: err.grpc, message: err.message, details: detailsOf(err) },
  }),
  connectDetails: (err) => {
    const info = errorInfoOf(err);
    const { "@type": _type, ...debug } = info;
    return [{ type: "google.rpc.ErrorInfo", value: encodeErrorInfo(info), debug }];
  },
  jsonRpcStreamFailure: "plain",
};
