import type { TaskService } from "../../a2a/task-service.js";
import type { CallContext } from "../../auth/call-context.js";
import { DomainError, toDomainError } from "../../domain/errors.js";
import type { Logger } from "../../observability/logger.js";
import { noteRequest } from "../../observability/request-notes.js";
import { mediaTypeOf, pipeToSse, readBody, sendJson, SseWriter, type HttpRequest, type HttpResponse } from "../http-io.js";
import { isObject } from "../json-shape.js";
import { activatedExtensions } from "../extensions-header.js";
import { a2aVersionOf } from "../../a2a/protocol-version.js";
import { v10Operations } from "../../a2a/v10/v10-operations.js";
import { jsonRpcErrorV10 } from "../a2a-v10-errors.js";
import { jsonRpcError, type JsonRpcErrorResponse, type JsonRpcId } from "./jsonrpc-errors.js";
import { v03Methods } from "./jsonrpc-v03-handler.js";
import { v10Methods } from "./jsonrpc-v10-handler.js";

/** JSON-RPC bodies are application/json; application/a2a+json (the 1.0 media type) is accepted too. */
const JSON_MEDIA_TYPES = ["application/json", "application/a2a+json"];

type ErrorShape = (id: JsonRpcId, err: unknown) => JsonRpcErrorResponse;

export interface JsonRpcEndpointOptions {
  service: TaskService;
  logger: Logger;
  maxBodyBytes: number;
  /** Extension URIs this agent supports; requested ones among them are echoed back as activated. */
  supportedExtensions: string[];
  /** Whether tasks are durable (A2A 1.0 `returnImmediately` needs it). */
  durableTasks?: boolean;
}

/**
 * The JSON-RPC 2.0 endpoint at the card's `url`, for A2A 0.3 and 1.0 at once: PascalCase methods (the 1.0
 * names) go to the 1.0 handler and answer 1.0-shaped errors (`error.data` = [ErrorInfo]); everything else
 * (slash names, unknown names) goes to 0.3. `A2A-Version` must name a served version (absent = 0.3), else
 * -32009. Protocol errors answer HTTP 200 with a JSON-RPC error; transport problems (method, media type,
 * size) answer their HTTP status with a JSON-RPC error body.
 */
export function createJsonRpcEndpoint(options: JsonRpcEndpointOptions) {
  const methods = v03Methods(options.service);
  const methodsV10 = v10Methods(v10Operations({ service: options.service, durableTasks: options.durableTasks ?? false }));

  return async function handleJsonRpc(req: HttpRequest, res: HttpResponse, ctx: CallContext): Promise<void> {
    const headers = activatedExtensions(req, options.supportedExtensions);
    if (req.method !== "POST") {
      sendJson(res, 405, jsonRpcError(null, new DomainError("invalid-request", "JSON-RPC requests must use POST")), { allow: "POST", ...headers });
      return;
    }
    if (!JSON_MEDIA_TYPES.includes(mediaTypeOf(req))) {
      const err = new DomainError("invalid-request", `Content-Type must be application/json or application/a2a+json (got "${req.headers["content-type"] ?? ""}")`);
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
    const v10 = Object.hasOwn(methodsV10, method);
    const errorShape: ErrorShape = v10 ? jsonRpcErrorV10 : jsonRpcError;
    try {
      a2aVersionOf(req);
    } catch (err) {
      sendJson(res, 200, errorShape(id, err), headers);
      return;
    }
    const fn = v10 ? methodsV10[method] : Object.hasOwn(methods, method) ? methods[method] : undefined;
    // Known names only: the method becomes a metric label, so unknown ones must not add label values.
    if (fn) noteRequest({ method, version: v10 ? "1.0" : "0.3" });
    if (!fn) {
      sendJson(res, 200, jsonRpcError(id, new DomainError("method-not-found", `Method not found: ${method}`)), headers);
      return;
    }
    let outcome;
    try {
      outcome = await fn(params, ctx);
    } catch (err) {
      respondError(res, id, err, headers, errorShape);
      return;
    }
    if (outcome.kind === "unary") {
      sendJson(res, 200, { jsonrpc: "2.0", id, result: outcome.result }, headers);
      return;
    }
    await streamResults(res, id, outcome.events, headers, errorShape, v10);
  };

  function respondError(res: HttpResponse, id: JsonRpcId, err: unknown, headers: Record<string, string>, errorShape: ErrorShape): void {
    logIfInternal(err, id);
    sendJson(res, 200, errorShape(id, err), headers);
  }

  /** Each SSE `data:` is a complete JSON-RPC response with the request id; an error ends the stream. */
  async function streamResults(res: HttpResponse, id: JsonRpcId, events: AsyncIterable<unknown>, headers: Record<string, string>, errorShape: ErrorShape, v10: boolean): Promise<void> {
    await pipeToSse(res, events, {
      headers,
      encode: (result) => ({ jsonrpc: "2.0", id, result }),
      // Nothing streamed yet: 1.0 clients read a plain JSON-RPC error (typed by its code); strict v0.3 clients
      // expect SSE, so for them the error is one SSE event.
      failedBeforeFirst: async (err) => {
        if (v10) return respondError(res, id, err, headers, errorShape);
        logIfInternal(err, id);
        const sse = new SseWriter(res, 15_000, headers);
        await sse.send(errorShape(id, err), { event: "error" });
        sse.end();
      },
      errorFrame: (err) => {
        logIfInternal(err, id);
        return errorShape(id, err);
      },
    });
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

