import type { A2AService, CallContext } from "../../a2a/a2a-service.js";
import { DomainError, toDomainError } from "../../domain/errors.js";
import type { Logger } from "../../observability/logger.js";
import { mediaTypeOf, readBody, sendJson, SseWriter, type HttpRequest, type HttpResponse } from "../http-io.js";
import { isObject } from "../json-shape.js";
import { jsonRpcError, type JsonRpcId } from "./jsonrpc-errors.js";
import { v03Methods } from "./jsonrpc-v03-handler.js";

const EXTENSIONS_HEADER = "x-a2a-extensions";

export interface JsonRpcEndpointOptions {
  service: A2AService;
  logger: Logger;
  maxBodyBytes: number;
  /** Extension URIs this agent supports; requested ones among them are echoed back as activated. */
  supportedExtensions: string[];
}

/**
 * The JSON-RPC 2.0 endpoint at the card's `url`. Protocol errors answer HTTP 200 with a JSON-RPC error;
 * transport problems (method, media type, size) answer their HTTP status with a JSON-RPC error body.
 */
export function createJsonRpcEndpoint(options: JsonRpcEndpointOptions) {
  const methods = v03Methods(options.service);

  return async function handleJsonRpc(req: HttpRequest, res: HttpResponse, ctx: CallContext): Promise<void> {
    const headers = activatedExtensions(req, options.supportedExtensions);
    if (req.method !== "POST") {
      sendJson(res, 405, jsonRpcError(null, new DomainError("invalid-request", "JSON-RPC requests must use POST")), { allow: "POST", ...headers });
      return;
    }
    if (mediaTypeOf(req) !== "application/json") {
      const err = new DomainError("invalid-request", `Content-Type must be application/json (got "${req.headers["content-type"] ?? ""}")`);
      sendJson(res, 415, jsonRpcError(null, err), headers);
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(req, options.maxBodyBytes);
    } catch (err) {
      sendJson(res, 413, jsonRpcError(null, err), headers);
      return;
    }
    let request: unknown;
    try {
      request = JSON.parse(body.toString("utf8"));
    } catch {
      sendJson(res, 200, jsonRpcError(null, new DomainError("parse-error", "Invalid JSON payload: the body is not valid JSON")), headers);
      return;
    }
    const envelope = checkEnvelope(request);
    if ("error" in envelope) {
      sendJson(res, 200, jsonRpcError(envelope.id, envelope.error), headers);
      return;
    }
    const { id, method, params } = envelope;
    const fn = methods[method];
    if (!fn) {
      sendJson(res, 200, jsonRpcError(id, new DomainError("method-not-found", `Method not found: ${method}`)), headers);
      return;
    }
    let outcome;
    try {
      outcome = await fn(params, ctx);
    } catch (err) {
      respondError(res, id, err, headers);
      return;
    }
    if (outcome.kind === "unary") {
      sendJson(res, 200, { jsonrpc: "2.0", id, result: outcome.result }, headers);
      return;
    }
    await streamResults(res, id, outcome.events, headers);
  };

  function respondError(res: HttpResponse, id: JsonRpcId, err: unknown, headers: Record<string, string>): void {
    logIfInternal(err, id);
    sendJson(res, 200, jsonRpcError(id, err), headers);
  }

  /** Each SSE `data:` is a complete JSON-RPC response with the request id; an error ends the stream. */
  async function streamResults(res: HttpResponse, id: JsonRpcId, events: AsyncIterable<unknown>, headers: Record<string, string>): Promise<void> {
    const iterator = events[Symbol.asyncIterator]();
    let first: IteratorResult<unknown>;
    try {
      first = await iterator.next();
    } catch (err) {
      // Nothing was streamed yet: strict v0.3 clients still expect SSE, so the error is one SSE event.
      logIfInternal(err, id);
      const sse = new SseWriter(res, 15_000, headers);
      await sse.send(jsonRpcError(id, err), { event: "error" });
      sse.end();
      return;
    }
    const sse = new SseWriter(res, 15_000, headers);
    res.on("close", () => void iterator.return?.(undefined));
    try {
      for (let step = first; !step.done; step = await iterator.next()) {
        if (sse.isClosed) break;
        await sse.send({ jsonrpc: "2.0", id, result: step.value });
      }
    } catch (err) {
      logIfInternal(err, id);
      await sse.send(jsonRpcError(id, err), { event: "error" });
    } finally {
      sse.end();
    }
  }

  function logIfInternal(err: unknown, id: JsonRpcId): void {
    const domain = toDomainError(err);
    if (domain.code === "internal") options.logger.error({ err: domain.cause ?? err, rpcId: id }, "JSON-RPC call failed");
  }
}

type Envelope = { id: JsonRpcId; method: string; params: unknown } | { id: JsonRpcId; error: DomainError };

function checkEnvelope(request: unknown): Envelope {
  if (Array.isArray(request)) return { id: null, error: new DomainError("invalid-request", "Request payload validation error: batch requests are not supported") };
  if (!isObject(request)) return { id: null, error: new DomainError("invalid-request", "Request payload validation error: the request must be a JSON object") };
  const rawId = request["id"];
  const idValid = typeof rawId === "string" || (typeof rawId === "number" && Number.isFinite(rawId)) || rawId === null;
  const id: JsonRpcId = idValid ? (rawId as JsonRpcId) : null;
  if (request["jsonrpc"] !== "2.0") return { id, error: new DomainError("invalid-request", `Request payload validation error: "jsonrpc" must be "2.0"`) };
  if (!("id" in request)) return { id: null, error: new DomainError("invalid-request", `Request payload validation error: "id" is required (notifications are not supported)`) };
  if (!idValid) return { id: null, error: new DomainError("invalid-request", `Request payload validation error: "id" must be a string, a number or null`) };
  if (typeof request["method"] !== "string" || request["method"].length === 0) {
    return { id, error: new DomainError("invalid-request", `Request payload validation error: "method" must be a non-empty string`) };
  }
  return { id, method: request["method"], params: request["params"] ?? {} };
}

function activatedExtensions(req: HttpRequest, supported: string[]): Record<string, string> {
  const requested = String(req.headers[EXTENSIONS_HEADER] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const active = requested.filter((uri) => supported.includes(uri));
  return active.length > 0 ? { [EXTENSIONS_HEADER]: active.join(", ") } : {};
}
