import { toDomainError } from "../../domain/errors.js";
import { WIRE_CODES } from "../error-codes.js";
import { sendJson, type HttpResponse } from "../http-io.js";
import { statusHeaders } from "./wire-error.js";

/** The OpenWOP REST error envelope: exactly `{error, message, details?}`, with its HTTP status. */
export function openwopErrorBody(err: unknown): {
  status: number;
  body: { error: string; message: string; details?: Record<string, unknown> };
} {
  const domain = toDomainError(err);
  const codes = WIRE_CODES[domain.code];
  return {
    status: codes.http,
    body: { error: codes.rest, message: domain.message, ...(domain.details ? { details: domain.details } : {}) },
  };
}

/** The OpenWOP REST error exit. */
export function sendOpenwopError(res: HttpResponse, err: unknown, headers: Record<string, string> = {}): void {
  const { status, body } = openwopErrorBody(err);
  sendJson(res, status, body, { ...statusHeaders(status, err), ...headers });
}
