import { DomainError, toDomainError } from "../../domain/errors.js";
import { WIRE_CODES } from "../error-codes.js";

export type JsonRpcId = string | number | null;

export interface JsonRpcErrorResponse {
  jsonrpc: "2.0";
  id: JsonRpcId;
  error: { code: number; message: string; data?: unknown };
}

/** A JSON-RPC error object from any error; internal causes never reach the caller. */
export function jsonRpcError(id: JsonRpcId, err: unknown): JsonRpcErrorResponse {
  const domain = toDomainError(err);
  return {
    jsonrpc: "2.0",
    id,
    error: { code: WIRE_CODES[domain.code].jsonRpc, message: domain.message, ...(domain.details ? { data: domain.details } : {}) },
  };
}

export { DomainError };
