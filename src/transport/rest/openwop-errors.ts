import { toDomainError } from "../../domain/errors.js";
import { WIRE_CODES } from "../error-codes.js";
import { sendJson, type HttpResponse } from "../http-io.js";

/** The OpenWOP REST error envelope: exactly `{error, message, details?}`. */
export function sendOpenwopError(res: HttpResponse, err: unknown): void {
  const domain = toDomainError(err);
  const codes = WIRE_CODES[domain.code];
  sendJson(res, codes.http, { error: codes.rest, message: domain.message, ...(domain.details ? { details: domain.details } : {}) });
}
