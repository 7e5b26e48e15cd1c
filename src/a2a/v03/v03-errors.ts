import type { VersionErrorShapes } from "../version-module.js";

/**
 * The A2A 0.3 error shapes: JSON-RPC `{code, message, data?}` (data = the error's details), HTTP+JSON a bare
 * `{code, message, data?}` with the JSON-RPC code (as a2a-js 0.3 answers), gRPC a bare status. A JSON-RPC
 * stream that fails before its first event still answers SSE (strict 0.3 clients expect it).
 */
export const v03ErrorShapes: VersionErrorShapes = {
  // The table's shared row follows a2a-js 0.3: nothing of its own.
  statuses: {},
  jsonRpc: (id, err) => ({
    jsonrpc: "2.0",
    id,
    error: { code: err.jsonRpc, message: err.message, ...(err.details ? { data: err.details } : {}) },
  }),
  httpJson: (err) => ({ code: err.jsonRpc, message: err.message, ...(err.details ? { data: err.details } : {}) }),
  connectDetails: () => [],
  jsonRpcStreamFailure: "sse-event",
};
