import { challengeHeaders, type Challenges, type HeaderLookup } from "../../auth/authenticator.js";
import type { CallContext } from "../../auth/call-context.js";
import type { A2AVersion } from "../../domain/a2a-version.js";
import { a2aVersionNoted } from "../a2a-version-note.js";
import {
  DEFAULT_A2A_VERSION,
  versionAsked,
  versionModule,
  versionOfJsonRpcMethod,
  type BoundVersions,
} from "../../a2a/versions.js";
import { DomainError } from "../../domain/errors.js";
import { parseJsonBody } from "../../domain/json-input.js";
import { isObject } from "../../domain/json-shape.js";
import { jsonRpcErrorBody, type JsonRpcId } from "../errors/a2a-error-exits.js";
import { jsonRpcHttpStatus, retryAfterOf, wireErrorOf, type ReportError } from "../errors/wire-error.js";
import { noteRequest } from "../../observability/request-notes.js";
import { oncePerObject } from "../../domain/once-per-object.js";
import { streamCursorOf } from "../../domain/stream-cursor.js";
import { activatedExtensions } from "../extensions-header.js";
import {
  JsonText,
  mediaTypeOf,
  readBody,
  sendJson,
  sharedJson,
  SseWriter,
  streamToSse,
  type HttpRequest,
  type HttpResponse,
} from "../http-io.js";

/** JSON-RPC bodies are application/json; application/a2a+json (the 1.0 media type) is accepted too. */
const JSON_MEDIA_TYPES = ["application/json", "application/a2a+json"];

export interface JsonRpcEndpointOptions {
  versions: BoundVersions;
  report: ReportError;
  maxBodyBytes: number;
  /** MAX_INPUT_DEPTH: a body nested deeper is refused (-32602) before anything runs. */
  maxInputDepth: number;
  /** Extension URIs this agent supports; requested ones among them are echoed back as activated. */
  supportedExtensions: string[];
  /** The refusals' `WWW-Authenticate` (auth/authenticator.ts bearerChallenges); the plain one by default. */
  challenges?: Challenges;
}

/**
 * The JSON-RPC 2.0 endpoint at the card's `url`, for every registered A2A version at once: the method name
 * picks the version (slash names 0.3, PascalCase 1.0; unknown names the default version), and its errors
 * answer in that version's shape. `A2A-Version` must name a served version (absent = 0.3), else -32009.
 * Protocol errors answer HTTP 200 with a JSON-RPC error; transport problems (method, media type, size) and
 * refusals (a missing scope: 403 with its challenge) answer their HTTP status with a JSON-RPC error body.
 */
export function createJsonRpcEndpoint(options: JsonRpcEndpointOptions) {
  const { report } = options;
  const legacy = DEFAULT_A2A_VERSION;
  const served = [...options.versions.keys()];
  const challenges = options.challenges ?? challengeHeaders;

  return async function handleJsonRpc(req: HttpRequest, res: HttpResponse, ctx: CallContext): Promise<void> {
    const headers = activatedExtensions(req, options.supportedExtensions);
    const lookup: HeaderLookup = (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    // A retryable error (the store unavailable) carries Retry-After on its HTTP answer, as 503s do elsewhere; a
    // refusal its status and WWW-Authenticate, as on every HTTP binding. `status` only for transport problems.
    const fail = (version: A2AVersion, id: JsonRpcId, err: unknown, status?: number) => {
      const domain = report(err, { rpcId: id });
      const all = { ...headers, ...retryAfterOf(domain), ...challenges(lookup, domain) };
      sendJson(res, status ?? jsonRpcHttpStatus(domain, version), jsonRpcErrorBody(version, id, domain), all);
    };
    if (req.method !== "POST") {
      sendJson(
        res,
        405,
        jsonRpcErrorBody(legacy, null, new DomainError("invalid-request", "JSON-RPC requests must use POST")),
        { allow: "POST", ...headers },
      );
      return;
    }
    if (!JSON_MEDIA_TYPES.includes(mediaTypeOf(req))) {
      fail(
        legacy,
        null,
        new DomainError(
          "unsupported-media-type",
          `Content-Type must be application/json or application/a2a+json (got "${req.headers["content-type"] ?? ""}")`,
        ),
        415,
      );
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(req, options.maxBodyBytes);
    } catch (err) {
      fail(legacy, null, err, 413);
      return;
    }
    let request: unknown;
    try {
      request = parseJsonBody(body, options.maxInputDepth);
    } catch (err) {
      fail(legacy, null, err);
      return;
    }
    const envelope = checkEnvelope(request);
    if ("error" in envelope) {
      fail(legacy, envelope.id, envelope.error);
      return;
    }
    const { id, method, params } = envelope;
    let version = versionOfJsonRpcMethod(method);
    try {
      // A draft sharing the method's version's names (1.1 over 1.0) answers when the call asks for it.
      version = versionAsked(version, a2aVersionNoted(req, served));
    } catch (err) {
      fail(version, id, err);
      return;
    }
    const table = options.versions.get(version)!.jsonRpc;
    const fn = Object.hasOwn(table, method) ? table[method] : undefined;
    // Known names only: the method becomes a metric label, so unknown ones must not add label values.
    if (fn) noteRequest({ method, version });
    if (!fn) {
      fail(legacy, id, new DomainError("method-not-found", `Method not found: ${method}`));
      return;
    }
    let outcome;
    try {
      outcome = await fn(params, ctx);
    } catch (err) {
      fail(version, id, err);
      return;
    }
    if (outcome.kind === "unary") {
      sendJson(res, 200, { jsonrpc: "2.0", id, result: outcome.result }, headers);
      return;
    }
    const errorOf = (err: unknown) => jsonRpcErrorBody(version, id, report(err, { rpcId: id }));
    // Each SSE `data:` is a complete JSON-RPC response with the request id; an error ends the stream.
    await streamToSse(res, outcome.events, {
      headers,
      encode: (result) => responseText(id, result),
      failedBeforeFirst: async (err) => {
        // A refusal is an HTTP answer (403 and its challenge) in every version, not an event of a stream.
        const refused = err instanceof DomainError && jsonRpcHttpStatus(err, version) !== 200;
        if (refused || versionModule(version).errors.jsonRpcStreamFailure === "plain") return fail(version, id, err);
        const domain = report(err, { rpcId: id });
        const sse = new SseWriter(res, 15_000, { ...headers, ...retryAfterOf(domain) });
        await sse.send(jsonRpcErrorBody(version, id, domain), { event: "error" });
        sse.end();
      },
      errorFrame: errorOf,
    });
  };
}

/**
 * The answer to a JSON-RPC call refused before the endpoint ran (401 / 403 from authentication, 429 over its
 * caller's request rate, with Retry-After): the body is
 * still read (within MAX_BODY_BYTES), so the error carries the request's id, and the version its method
 * names, whenever they can be read; otherwise id null in the 0.3 shape.
 */
export function createJsonRpcRefusal(options: {
  report: ReportError;
  maxBodyBytes: number;
  supportedExtensions: string[];
}) {
  return async function refuseJsonRpc(
    req: HttpRequest,
    res: HttpResponse,
    err: unknown,
    headers: Record<string, string> = {},
  ): Promise<void> {
    let id: JsonRpcId = null;
    let version: A2AVersion = DEFAULT_A2A_VERSION;
    try {
      const request: unknown = JSON.parse((await readBody(req, options.maxBodyBytes)).toString("utf8"));
      const envelope = checkEnvelope(request);
      id = envelope.id;
      if ("method" in envelope) version = versionOfJsonRpcMethod(envelope.method);
    } catch {
      // Unreadable (too large, not JSON, the caller gone): the id stays null.
    }
    const domain = options.report(err, { binding: "jsonrpc", rpcId: id });
    const all = { ...activatedExtensions(req, options.supportedExtensions), ...retryAfterOf(domain), ...headers };
    if (!res.writableEnded)
      sendJson(res, wireErrorOf(domain, version).http, jsonRpcErrorBody(version, id, domain), all);
  };
}

/** Per shared result (an update many streams send), its response text per request id. */
const responsesOf = oncePerObject((_result: object) => new Map<JsonRpcId, JsonText>());

/**
 * The same text as JSON.stringify({ jsonrpc, id, result }), with the result's JSON shared by the task's
 * streams, and made once per id for a shared result (streams whose requests used the same id send the same
 * frame: see `JsonText.dataFrame`).
 */
function responseText(id: JsonRpcId, result: unknown): JsonText {
  // The result's stream cursor (its task and log event) is the frame's SSE `id:`, for Last-Event-ID.
  const make = () =>
    new JsonText(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${sharedJson(result)}}`, streamCursorOf(result));
  if (typeof result !== "object" || result === null) return make();
  const byId = responsesOf(result);
  let text = byId.get(id);
  if (!text) byId.set(id, (text = make()));
  return text;
}

type Envelope = { id: JsonRpcId; method: string; params: unknown } | { id: JsonRpcId; error: DomainError };

function checkEnvelope(request: unknown): Envelope {
  if (Array.isArray(request))
    return {
      id: null,
      error: new DomainError("invalid-request", "Request payload validation error: batch requests are not supported"),
    };
  if (!isObject(request))
    return {
      id: null,
      error: new DomainError("invalid-request", "Request payload validation error: the request must be a JSON object"),
    };
  const rawId = request["id"];
  // A request without `id` is answered as if its id were null, as the reference SDKs do (they never treat
  // a request as a notification), so a caller that forgot the id still learns what happened.
  const idValid =
    rawId === undefined ||
    typeof rawId === "string" ||
    (typeof rawId === "number" && Number.isFinite(rawId)) ||
    rawId === null;
  const id: JsonRpcId = idValid ? ((rawId ?? null) as JsonRpcId) : null;
  if (request["jsonrpc"] !== "2.0")
    return {
      id,
      error: new DomainError("invalid-request", `Request payload validation error: "jsonrpc" must be "2.0"`),
    };
  if (!idValid)
    return {
      id: null,
      error: new DomainError(
        "invalid-request",
        `Request payload validation error: "id" must be a string, a number or null`,
      ),
    };
  if (typeof request["method"] !== "string" || request["method"].length === 0) {
    return {
      id,
      error: new DomainError(
        "invalid-request",
        `Request payload validation error: "method" must be a non-empty string`,
      ),
    };
  }
  return { id, method: request["method"], params: request["params"] ?? {} };
}
