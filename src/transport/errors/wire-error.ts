import type { A2AVersion } from "../../a2a/protocol-version.js";
import type { WireError } from "../../a2a/version-module.js";
import { versionModule } from "../../a2a/versions.js";
import { toDomainError, type DomainError } from "../../domain/errors.js";
import type { Logger } from "../../observability/logger.js";
import { WIRE_CODES } from "../error-codes.js";

/**
 * The one place that decides whether an error is internal and logs its cause: every binding's error exit
 * passes what it caught through here. The caller only ever sees the DomainError's code and message.
 */
export type ReportError = (err: unknown, where: Record<string, unknown>) => DomainError;

export function errorReporter(logger: Logger): ReportError {
  return (err, where) => {
    const domain = toDomainError(err);
    if (domain.code === "internal") logger.error({ err: domain.cause ?? err, ...where }, "request failed");
    return domain;
  };
}

/** A domain error with its row of the one table (`WIRE_CODES`), in the status columns `version` answers with. */
export function wireErrorOf(err: unknown, version: A2AVersion): WireError {
  const domain = toDomainError(err);
  const codes = WIRE_CODES[domain.code];
  const v10Columns = versionModule(version).errors.statusColumns === "1.0";
  return {
    code: domain.code,
    message: domain.message,
    ...(domain.details ? { details: domain.details } : {}),
    jsonRpc: codes.jsonRpc,
    http: (v10Columns ? codes.http10 : undefined) ?? codes.http,
    grpc: (v10Columns ? codes.grpc10 : undefined) ?? codes.grpc,
    reason: codes.reason ?? domain.code.toUpperCase().replace(/-/g, "_"),
  };
}
