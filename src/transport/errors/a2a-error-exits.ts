import { Code, ConnectError } from "@connectrpc/connect";
import type { A2AVersion } from "../../domain/a2a-version.js";
import type { JsonRpcErrorBody } from "../../a2a/version-module.js";
import { versionModule } from "../../a2a/versions.js";
import { retryInfoDetail } from "../../a2a/retry-info.js";
import type { WireCodes } from "../error-codes.js";
import { wireErrorOf } from "./wire-error.js";

/**
 * The error exits of the three A2A bindings, each taking the version whose shape the caller reads; codes and
 * statuses come from the one table (`WIRE_CODES`), shapes from the version folder. They neither log nor
 * decide what is internal (`errorReporter` does).
 */

export type JsonRpcId = string | number | null;

/** JSON-RPC: the error response (HTTP 200 unless the transport failed). */
export function jsonRpcErrorBody(version: A2AVersion, id: JsonRpcId, err: unknown): JsonRpcErrorBody {
  return versionModule(version).errors.jsonRpc(id, wireErrorOf(err, version));
}

/** HTTP+JSON: status, body and media type. */
export function httpJsonError(
  version: A2AVersion,
  err: unknown,
): { status: number; body: unknown; contentType: string } {
  const module = versionModule(version);
  const wire = wireErrorOf(err, version);
  return { status: wire.http, body: module.errors.httpJson(wire), contentType: module.restMediaType };
}

/** The gRPC status names of the one wire table, as Connect's enum (a spelling conversion, not a second table). */
const CONNECT_CODE: Record<WireCodes["grpc"], Code> = {
  INVALID_ARGUMENT: Code.InvalidArgument,
  NOT_FOUND: Code.NotFound,
  FAILED_PRECONDITION: Code.FailedPrecondition,
  UNIMPLEMENTED: Code.Unimplemented,
  INTERNAL: Code.Internal,
  UNAUTHENTICATED: Code.Unauthenticated,
  PERMISSION_DENIED: Code.PermissionDenied,
  ALREADY_EXISTS: Code.AlreadyExists,
  ABORTED: Code.Aborted,
  RESOURCE_EXHAUSTED: Code.ResourceExhausted,
  UNAVAILABLE: Code.Unavailable,
  DEADLINE_EXCEEDED: Code.DeadlineExceeded,
};

/**
 * Connect / gRPC / gRPC-Web: the ConnectError the caller sees, with the version's status details, and a
 * `google.rpc.RetryInfo` for every version when the error names a retry time (a limit's refusal).
 * ConnectErrors raised by the framework itself (cancellation, deadline, size limits) pass through.
 */
export function connectErrorOf(version: A2AVersion, err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const wire = wireErrorOf(err, version);
  const error = new ConnectError(wire.message, CONNECT_CODE[wire.grpc as WireCodes["grpc"]] ?? Code.Unknown);
  error.details.push(...versionModule(version).errors.connectDetails(wire));
  const retry = retryInfoDetail(wire);
  if (retry) error.details.push(retry);
  return error;
}
