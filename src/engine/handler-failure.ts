import { randomUUID } from "node:crypto";
import type { Logger } from "../observability/logger.js";
import { HandlerError } from "../workflows/workflow-types.js";

/** A failed handler (or service call) as the run records it and callers see it. */
export interface CallerFailure {
  code: string;
  message: string;
  retryable: boolean;
}

/**
 * What callers may see of an error a handler threw. A HandlerError's code and message are written for them
 * and pass as they are. Any other error's text is the handler's internals (a connection string, a password
 * in a driver's message): callers get a generic message with a correlation id, and only the log, at error
 * level, gets the full text and stack under the same id.
 */
export function callerFailure(
  err: unknown,
  logger: Logger,
  fields: Record<string, unknown>,
  subject: string,
  code = "handler_error",
): CallerFailure {
  if (err instanceof HandlerError) {
    logger.warn({ err, ...fields }, `${subject} failed`);
    return { code: err.code, message: err.message, retryable: err.retryable };
  }
  return opaqueFailure(err, logger, fields, subject, code);
}

/** An error whose text is not for callers: the generic message and a fresh correlation id, the error logged under it. */
export function opaqueFailure(
  err: unknown,
  logger: Logger,
  fields: Record<string, unknown>,
  subject: string,
  code = "handler_error",
): CallerFailure {
  const correlationId = randomUUID();
  logger.error({ err, correlationId, ...fields }, `${subject} threw; callers see only correlation id ${correlationId}`);
  return { code, message: `${subject} failed; correlation id ${correlationId}`, retryable: false };
}
