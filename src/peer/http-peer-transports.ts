/**
 * The HTTP-based wires of the `a2a.invoke` node, over the guarded peer HTTP client (egress guard, pinned
 * connections, capped bodies, no redirects):
 *
 *   JSON-RPC 0.3   POST <url>  `message/send`, `tasks/get`, `tasks/cancel`; 0.3 JSON (`kind` discriminators)
 *   JSON-RPC 1.0   POST <url>  `SendMessage`, `GetTask`, `CancelTask`; ProtoJSON of lf.a2a.v1; `A2A-Version: 1.0`
 *   HTTP+JSON 0.3  `/v1/message:send`, `/v1/tasks/{id}`, `/v1/tasks/{id}:cancel`; ProtoJSON of a2a.v1
 *   HTTP+JSON 1.0  `[/{tenant}]/message:send`, `/tasks/{id}`, `/tasks/{id}:cancel`; ProtoJSON of lf.a2a.v1,
 *                  `application/a2a+json`, `A2A-Version: 1.0`
 *
 * What goes in each request and how each answer reads is the version's (its module's client half,
 * peer-version.ts); these transports own the wire: URLs, headers, SSE, errors.
 *
 * Every request says its version in `A2A-Version` (absent means 0.3, but saying it lets a dual-version peer
 * route without guessing). Sends are non-blocking (0.3 `blocking: false`, 1.0 `returnImmediately: true`): the
 * peer answers with its task at once; the node records its id, then polls.
 *
 * Errors are PeerCallErrors with the retry decision: 401/403 say the credentials were refused (final), 5xx,
 * 408, 425 and 429 may clear up (retried), a JSON-RPC -32603 may too; every other answer is final.
 */
import { randomUUID } from "node:crypto";
import type { Message } from "../domain/a2a-types.js";
import { parsePeerEndpoint, type PeerEndpoint } from "./peer-endpoint.js";
import {
  DEFAULT_MAX_PEER_RESPONSE_BYTES,
  PeerCallError,
  RETRYABLE_HTTP_STATUS,
  type PeerHttpClient,
  type PeerHttpResponse,
} from "./peer-http-client.js";
import { ALL_HISTORY, invalidAnswer, parsePeerJson } from "./peer-json.js";
import { sseData } from "./peer-sse.js";
import { peerVersionIn, type PeerVersionClient, type PeerVersions } from "./peer-version.js";
import {
  DEFAULT_STREAM_IDLE_MS,
  type PeerCallOptions,
  type PeerReply,
  type PeerSendOptions,
  type PeerStreamEvent,
  type PeerTask,
  type PeerTransport,
} from "./peer-types.js";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

const A2A_JSON = "application/a2a+json";

/** A recorded endpoint and the client half of the version it names. */
function resolved(versions: PeerVersions, recorded: string): { endpoint: PeerEndpoint; version: PeerVersionClient } {
  const endpoint = parsePeerEndpoint(recorded);
  return { endpoint, version: peerVersionIn(versions, endpoint.version) };
}

function whereOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}`;
}

/** What a refused or failed HTTP answer says, as a PeerCallError; `detail` is what the body said (clipped). */
export function httpStatusError(where: string, status: number, detail?: string): PeerCallError {
  const said = detail ? `: ${detail.slice(0, 200)}` : "";
  if (status === 401)
    return new PeerCallError(
      `${where} answered HTTP 401 Unauthorized (the credentials for this peer are missing or wrong)${said}`,
      "unauthorized",
      false,
      undefined,
      401,
    );
  if (status === 403)
    return new PeerCallError(
      `${where} answered HTTP 403 Forbidden (the credentials for this peer are not allowed to do this)${said}`,
      "unauthorized",
      false,
    );
  return new PeerCallError(
    `${where} answered HTTP ${status}${said}`,
    "http",
    status >= 500 || RETRYABLE_HTTP_STATUS.has(status),
  );
}

/** The message of an error body: JSON-RPC `error.message`, 1.0 `{error: {message}}`, 0.3 `{message}`. */
function errorDetail(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as unknown;
    if (!isObject(body)) return undefined;
    const error = isObject(body["error"]) ? body["error"] : body;
    return typeof error["message"] === "string" ? error["message"] : undefined;
  } catch {
    return undefined;
  }
}

/** One request; a 4xx/5xx answer throws, except (for JSON-RPC) a 4xx other than 401/403 carrying a JSON-RPC error, which is read as the answer. */
async function exchange(
  http: PeerHttpClient,
  request: Parameters<PeerHttpClient["request"]>[0],
  jsonRpc = false,
): Promise<PeerHttpResponse> {
  const response = await http.request({ ...request, returnErrorStatus: true });
  const { status } = response;
  if (status < 400) return response;
  if (jsonRpc && status < 500 && status !== 401 && status !== 403 && isJsonRpcError(response.body)) return response;
  throw httpStatusError(whereOf(request.url), status, errorDetail(response.body));
}

/** A 4xx whose body is a JSON-RPC error is an answer (read as one), not a transport failure. */
function isJsonRpcError(text: string): boolean {
  try {
    const body = JSON.parse(text) as unknown;
    return isObject(body) && body["jsonrpc"] === "2.0" && isObject(body["error"]);
  } catch {
    return false;
  }
}

// ------------------------------------------------------------------------------------------ JSON-RPC

/** A JSON-RPC error answer as a PeerCallError: -32603 (internal error) may be transient; every other one is an answer. */
function rpcError(method: string, body: unknown): PeerCallError {
  const error = isObject(body) && isObject(body["error"]) ? body["error"] : {};
  const code = typeof error["code"] === "number" ? error["code"] : 0;
  const message = typeof error["message"] === "string" ? error["message"].slice(0, 200) : "";
  return new PeerCallError(
    `the remote agent answered ${method} with JSON-RPC error ${code}${message ? ` (${message})` : ""}`,
    "rpc",
    code === -32603,
    code,
  );
}

/** The first 64 KiB of an answer that is not the stream asked for: enough to read the peer's error. */
async function errorBodyOf(text: AsyncIterable<string>): Promise<string> {
  let body = "";
  for await (const chunk of text) {
    body += chunk;
    if (body.length > 65_536) break;
  }
  return body;
}

/** JSON-RPC in every version, chosen per call by the version the endpoint names. */
export function createJsonRpcPeerTransport(opts: {
  http: PeerHttpClient;
  requestTimeoutMs: number;
  versions: PeerVersions;
  streamIdleMs?: number;
}): PeerTransport {
  const { http, versions } = opts;

  async function rpc(
    endpoint: PeerEndpoint,
    method: string,
    params: unknown,
    options: PeerCallOptions | undefined,
  ): Promise<unknown> {
    const response = await exchange(
      http,
      {
        method: "POST",
        url: endpoint.url,
        headers: { ...options?.headers, "a2a-version": endpoint.version },
        body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
        timeoutMs: opts.requestTimeoutMs,
        ...(options?.signal ? { signal: options.signal } : {}),
        ...(options?.tls ? { tls: options.tls } : {}),
      },
      true,
    );
    const body = parsePeerJson(response.body, `${method} response`);
    if (!isObject(body) || body["jsonrpc"] !== "2.0") throw invalidAnswer(`${method} response (not JSON-RPC 2.0)`);
    if (isObject(body["error"])) throw rpcError(method, body);
    if (!("result" in body)) throw invalidAnswer(`${method} response (no result)`);
    return body["result"];
  }

  /**
   * The version's task stream method (1.0 `SubscribeToTask`, 0.3 `tasks/resubscribe`): an SSE stream, each `result`
   * an event the version reads. A JSON answer instead of a stream is the peer's error (a terminal task is refused
   * by 1.0 peers).
   */
  async function* subscribe(
    recorded: string,
    taskId: string,
    options: PeerCallOptions | undefined,
  ): AsyncGenerator<PeerStreamEvent> {
    if (!http.stream) throw new PeerCallError("this host's peer HTTP client cannot hold streams", "unsupported", false);
    const { endpoint, version } = resolved(versions, recorded);
    const codec = version.jsonRpc;
    const method = codec.methods.subscribe;
    const response = await http.stream({
      method: "POST",
      url: endpoint.url,
      headers: { ...options?.headers, "a2a-version": endpoint.version },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: randomUUID(),
        method,
        params: codec.subscribeParams(taskId, endpoint.tenant),
      }),
      timeoutMs: opts.requestTimeoutMs,
      idleTimeoutMs: opts.streamIdleMs ?? DEFAULT_STREAM_IDLE_MS,
      ...(options?.signal ? { signal: options.signal } : {}),
      ...(options?.tls ? { tls: options.tls } : {}),
    });
    if (response.status >= 400 || !response.contentType.toLowerCase().startsWith("text/event-stream")) {
      const text = await errorBodyOf(response.text);
      if (response.status >= 400 && !isJsonRpcError(text))
        throw httpStatusError(whereOf(endpoint.url), response.status, errorDetail(text));
      throw rpcError(method, parsePeerJson(text, `${method} response`));
    }
    for await (const data of sseData(response.text, DEFAULT_MAX_PEER_RESPONSE_BYTES)) {
      const frame = parsePeerJson(data, `${method} event`);
      if (!isObject(frame) || frame["jsonrpc"] !== "2.0") throw invalidAnswer(`${method} event (not JSON-RPC 2.0)`);
      if (isObject(frame["error"])) throw rpcError(method, frame);
      const event = codec.readStreamEvent(frame["result"], `${method} event`);
      if (event) yield event;
    }
  }

  return {
    subscribe: (recorded, taskId, options) => subscribe(recorded, taskId, options),
    async send(recorded, message, options) {
      const { endpoint, version } = resolved(versions, recorded);
      const { methods, sendParams, readReply } = version.jsonRpc;
      return readReply(
        await rpc(endpoint, methods.send, sendParams(message, endpoint.tenant, options?.push), options),
        `${methods.send} result`,
      );
    },
    async getTask(recorded, taskId, options) {
      const { endpoint, version } = resolved(versions, recorded);
      const { methods, getParams, readTask } = version.jsonRpc;
      return readTask(
        await rpc(endpoint, methods.get, getParams(taskId, endpoint.tenant), options),
        `${methods.get} result`,
      );
    },
    async cancelTask(recorded, taskId, options) {
      const { endpoint, version } = resolved(versions, recorded);
      const { methods, cancelParams, readTask } = version.jsonRpc;
      return readTask(
        await rpc(endpoint, methods.cancel, cancelParams(taskId, endpoint.tenant), options),
        `${methods.cancel} result`,
      );
    },
    close: () => http.close(),
  };
}

// ------------------------------------------------------------------------------------------ HTTP+JSON

/** HTTP+JSON in every version (0.3: `/v1/…`, a2a.v1 ProtoJSON; 1.0: `[/{tenant}]/…`, lf.a2a.v1 ProtoJSON), by the endpoint's version. */
export function createRestPeerTransport(opts: {
  http: PeerHttpClient;
  requestTimeoutMs: number;
  versions: PeerVersions;
  streamIdleMs?: number;
}): PeerTransport {
  const { http, versions } = opts;

  /** The URL of `path` under the endpoint's base and the version's prefix (`/v1` for 0.3, the tenant's for 1.0). */
  function urlOf(endpoint: PeerEndpoint, version: PeerVersionClient, path: string, query = ""): string {
    const base = endpoint.url.replace(/\/+$/, "");
    return `${base}${version.rest.prefix(endpoint.tenant)}${path}${query}`;
  }

  async function call(
    endpoint: PeerEndpoint,
    version: PeerVersionClient,
    what: string,
    method: "GET" | "POST",
    url: string,
    body: unknown,
    options: PeerCallOptions | undefined,
  ): Promise<unknown> {
    const response = await exchange(http, {
      method,
      url,
      headers: {
        ...options?.headers,
        accept: `${A2A_JSON}, application/json`,
        ...(body !== undefined ? { "content-type": version.rest.mediaType } : {}),
        "a2a-version": endpoint.version,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      timeoutMs: opts.requestTimeoutMs,
      ...(options?.signal ? { signal: options.signal } : {}),
      ...(options?.tls ? { tls: options.tls } : {}),
    });
    return parsePeerJson(response.body, `${what} response`);
  }

  const taskPath = (taskId: string) => `/tasks/${encodeURIComponent(taskId)}`;

  /**
   * `POST …/tasks/{id}:subscribe`, where the version has it (1.0): an SSE stream whose `data` the version reads.
   * (0.3 HTTP+JSON has no stream here: such a peer is pushed to or polled.) An answer that is not a stream is the peer's error.
   */
  async function* subscribe(
    recorded: string,
    taskId: string,
    options: PeerCallOptions | undefined,
  ): AsyncGenerator<PeerStreamEvent> {
    const { endpoint, version } = resolved(versions, recorded);
    const stream = version.rest.subscribe;
    if (!http.stream || !stream)
      throw new PeerCallError(`no task stream over HTTP+JSON ${endpoint.version} here`, "unsupported", false);
    const url = urlOf(endpoint, version, `${taskPath(taskId)}:subscribe`);
    const response = await http.stream({
      method: "POST",
      url,
      headers: {
        ...options?.headers,
        accept: "text/event-stream",
        "content-type": version.rest.mediaType,
        "a2a-version": endpoint.version,
      },
      body: JSON.stringify(stream.body(taskId, endpoint.tenant)),
      timeoutMs: opts.requestTimeoutMs,
      idleTimeoutMs: opts.streamIdleMs ?? DEFAULT_STREAM_IDLE_MS,
      ...(options?.signal ? { signal: options.signal } : {}),
      ...(options?.tls ? { tls: options.tls } : {}),
    });
    if (response.status >= 400 || !response.contentType.toLowerCase().startsWith("text/event-stream")) {
      const text = await errorBodyOf(response.text);
      throw httpStatusError(whereOf(url), response.status >= 400 ? response.status : 502, errorDetail(text));
    }
    for await (const data of sseData(response.text, DEFAULT_MAX_PEER_RESPONSE_BYTES)) {
      const event = stream.readEvent(parsePeerJson(data, "tasks:subscribe event"), "tasks:subscribe event");
      if (event) yield event;
    }
  }

  return {
    subscribe: (recorded, taskId, options) => subscribe(recorded, taskId, options),
    async send(recorded, message: Message, options?: PeerSendOptions): Promise<PeerReply> {
      const { endpoint, version } = resolved(versions, recorded);
      const json = await call(
        endpoint,
        version,
        "message:send",
        "POST",
        urlOf(endpoint, version, "/message:send"),
        version.rest.sendBody(message, endpoint.tenant, options?.push),
        options,
      );
      return version.rest.readReply(json, "message:send response");
    },
    async getTask(recorded, taskId, options): Promise<PeerTask> {
      const { endpoint, version } = resolved(versions, recorded);
      const json = await call(
        endpoint,
        version,
        "tasks/get",
        "GET",
        urlOf(endpoint, version, taskPath(taskId), `?historyLength=${ALL_HISTORY}`),
        undefined,
        options,
      );
      return version.rest.readTask(json, "task");
    },
    async cancelTask(recorded, taskId, options): Promise<PeerTask> {
      const { endpoint, version } = resolved(versions, recorded);
      const json = await call(
        endpoint,
        version,
        "tasks:cancel",
        "POST",
        urlOf(endpoint, version, `${taskPath(taskId)}:cancel`),
        version.rest.cancelBody(taskId, endpoint.tenant),
        options,
      );
      return version.rest.readTask(json, "task");
    },
    close: () => http.close(),
  };
}
