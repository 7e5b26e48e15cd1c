import { Code, ConnectError } from "@connectrpc/connect";
import { toDomainError } from "../../domain/errors.js";
import type { Logger } from "../../observability/logger.js";
import { WIRE_CODES, type WireCodes } from "../error-codes.js";

/** The gRPC status names of the one wire table, as Connect's enum (a spelling conversion, not a second table). */
export const CONNECT_CODE: Record<WireCodes["grpc"], Code> = {
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
};

/**
 * Any error from a handler as the ConnectError the caller sees: DomainErrors keep their message and get the
 * status of `WIRE_CODES[code].grpc`; anything else is logged with its cause and answers a bare "Internal
 * error". ConnectErrors raised by the framework itself (cancellation, deadline) pass through.
 */
export function toConnectError(err: unknown, logger: Logger, rpc: string): ConnectError {
  if (err instanceof ConnectError) return err;
  const domain = toDomainError(err);
  if (domain.code === "internal") logger.error({ err: domain.cause ?? err, rpc }, "RPC failed");
  return new ConnectError(domain.message, CONNECT_CODE[WIRE_CODES[domain.code].grpc]);
}
