/**
 * The A2A v0.3 client of the `a2a.invoke` node: agent card discovery, then `message/send`, `tasks/get` and
 * `tasks/cancel` over one of two transports chosen from the card — JSON-RPC (here, over the guarded peer HTTP
 * client) or gRPC (`a2a.v1.A2AService`, grpc-peer-client.ts). Everything a peer answers is untrusted input: it
 * is checked field by field and reduced to our domain shapes (a2a-wire-facts §2).
 *
 * Transport choice (`peerEndpointOf`): gRPC when the card prefers it (a 0.3 card's `preferredTransport: "GRPC"`,
 * or a 1.0 card whose first 0.3 interface is gRPC); otherwise the card's JSON-RPC 0.3 interface; otherwise its
 * gRPC 0.3 interface; a peer with neither is refused with a clear error. HTTP+JSON is never used. The chosen
 * endpoint names its transport (gRPC endpoints start with `grpc+`), so calls after a restart, made from the
 * recorded endpoint alone, go over the same wire.
 */
import { randomUUID } from "node:crypto";
import { nestingDepth, WIRE_MAX_DEPTH } from "../domain/json-input.js";
import type { Artifact, Message, Part, Role } from "../domain/a2a-types.js";
import { grpcEndpointOf, isGrpcEndpoint } from "./grpc-peer-client.js";
import { PeerCallError, type PeerHttpClient } from "./peer-http-client.js";
import type { PeerEndpoint, PeerTask, PeerTransport, PeerTransportName } from "./peer-types.js";

export type { PeerEndpoint, PeerTransport, PeerTransportName } from "./peer-types.js";

/** Discovery plus the calls, each routed to the transport its endpoint names. */
export interface A2APeerClient extends PeerTransport {
  discover(agentCardUrl: string, signal?: AbortSignal): Promise<PeerEndpoint>;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function invalid(what: string): PeerCallError {
  return new PeerCallError(`the remote agent sent an invalid ${what}`, "protocol", false);
}

function parsePart(raw: unknown): Part | undefined {
  if (!isObject(raw)) return undefined;
  const metadata = isObject(raw["metadata"]) ? { metadata: raw["metadata"] } : {};
  switch (raw["kind"]) {
    case "text":
      return typeof raw["text"] === "string" ? { kind: "text", text: raw["text"], ...metadata } : undefined;
    case "data":
      return isObject(raw["data"]) ? { kind: "data", data: raw["data"], ...metadata } : undefined;
    case "file": {
      const file = raw["file"];
      if (!isObject(file)) return undefined;
      const uri = str(file["uri"]);
      const bytes = str(file["bytes"]);
      if (uri === undefined && bytes === undefined) return undefined;
      const mimeType = str(file["mimeType"]);
      const name = str(file["name"]);
      return {
        kind: "file",
        file: { ...(uri !== undefined ? { uri } : {}), ...(bytes !== undefined ? { bytes } : {}), ...(mimeType ? { mimeType } : {}), ...(name ? { name } : {}) },
        ...metadata,
      };
    }
    default:
      return undefined; // unknown part kinds are dropped
  }
}

function parseParts(raw: unknown): Part[] {
  return Array.isArray(raw) ? raw.flatMap((p) => parsePart(p) ?? []) : [];
}

function parseMessage(raw: unknown): Message | undefined {
  if (!isObject(raw) || typeof raw["messageId"] !== "string") return undefined;
  const role: Role = raw["role"] === "user" ? "user" : "agent";
  const taskId = str(raw["taskId"]);
  const contextId = str(raw["contextId"]);
  return {
    messageId: raw["messageId"],
    role,
    parts: parseParts(raw["parts"]),
    ...(taskId ? { taskId } : {}),
    ...(contextId ? { contextId } : {}),
    ...(isObject(raw["metadata"]) ? { metadata: raw["metadata"] } : {}),
  };
}

function parseArtifact(raw: unknown, index: number): Artifact | undefined {
  if (!isObject(raw)) return undefined;
  const artifactId = str(raw["artifactId"]) ?? `artifact-${index}`;
  const name = str(raw["name"]);
  const description = str(raw["description"]);
  return {
    artifactId,
    ...(name !== undefined ? { name } : {}),
    ...(description ? { description } : {}),
    parts: parseParts(raw["parts"]),
    ...(isObject(raw["metadata"]) ? { metadata: raw["metadata"] } : {}),
  };
}

export function parsePeerTask(raw: unknown): PeerTask {
  if (!isObject(raw)) throw invalid("task (not an object)");
  const id = str(raw["id"]);
  const contextId = str(raw["contextId"]);
  const status = raw["status"];
  if (!id || contextId === undefined || !isObject(status) || typeof status["state"] !== "string") throw invalid("task (id, contextId and status.state are required)");
  const statusMessage = parseMessage(status["message"]);
  const statusTimestamp = str(status["timestamp"]);
  return {
    id,
    contextId,
    state: status["state"],
    ...(statusMessage ? { statusMessage } : {}),
    ...(statusTimestamp ? { statusTimestamp } : {}),
    artifacts: Array.isArray(raw["artifacts"]) ? raw["artifacts"].flatMap((a, i) => parseArtifact(a, i) ?? []) : [],
    history: Array.isArray(raw["history"]) ? raw["history"].flatMap((m) => parseMessage(m) ?? []) : [],
  };
}

/**
 * The endpoint an a2a.invoke node calls, from the peer's card (v0.3 `url`/`preferredTransport`/`additionalInterfaces`,
 * or 1.0 `supportedInterfaces`); the transport choice is described at the top of this file.
 */
export function peerEndpointOf(card: unknown, cardUrl: string): PeerEndpoint {
  if (!isObject(card)) throw invalid("agent card (not an object)");
  const candidates: Array<{ url: unknown; transport: unknown; version: unknown; preferred?: true }> = [];
  if (card["url"] !== undefined) candidates.push({ url: card["url"], transport: card["preferredTransport"] ?? "JSONRPC", version: card["protocolVersion"], preferred: true });
  for (const i of Array.isArray(card["additionalInterfaces"]) ? card["additionalInterfaces"] : []) {
    if (isObject(i)) candidates.push({ url: i["url"], transport: i["transport"], version: card["protocolVersion"] });
  }
  for (const i of Array.isArray(card["supportedInterfaces"]) ? card["supportedInterfaces"] : []) {
    if (isObject(i)) candidates.push({ url: i["url"], transport: i["protocolBinding"], version: i["protocolVersion"] });
  }
  const v03 = (version: unknown) => version === undefined || version === "" || (typeof version === "string" && /^0\.3(\.|$)/.test(version));
  const usable = (c: (typeof candidates)[number], transport: PeerTransportName) => typeof c.url === "string" && String(c.transport).toUpperCase() === transport && v03(c.version);
  // The card's preference: a 0.3 card's url/preferredTransport, else (a 1.0 card) its first 0.3 interface.
  const preferred = candidates.find((c) => c.preferred) ?? candidates.find((c) => typeof c.url === "string" && v03(c.version));
  const chosen = preferred && usable(preferred, "GRPC") ? preferred : (candidates.find((c) => usable(c, "JSONRPC")) ?? candidates.find((c) => usable(c, "GRPC")));
  const name = str(card["name"]);
  if (!chosen) {
    const offered = candidates.map((c) => `${String(c.transport)} ${String(c.version ?? "")}`.trim()).join(", ") || "none";
    throw new PeerCallError(`the remote agent offers no A2A 0.3 JSON-RPC or gRPC interface (it offers: ${offered}); this host calls peers over those only`, "unsupported", false);
  }
  const url = chosen.url as string;
  if (usable(chosen, "GRPC")) return { endpoint: grpcEndpointOf(url, cardUrl), transport: "GRPC", ...(name ? { name } : {}) };
  let endpoint: URL;
  try {
    endpoint = new URL(url, cardUrl);
  } catch {
    throw invalid("agent card (its JSON-RPC url is not a URL)");
  }
  // (Also keeps a JSON-RPC url from passing for a recorded gRPC endpoint.)
  if (endpoint.protocol !== "https:" && endpoint.protocol !== "http:") throw invalid("agent card (its JSON-RPC url is not an http(s) URL)");
  return { endpoint: endpoint.href, transport: "JSONRPC", ...(name ? { name } : {}) };
}

function wireMessage(message: Message): Json {
  return {
    kind: "message",
    messageId: message.messageId,
    role: message.role,
    parts: message.parts.map((p) => ({ ...p })),
    ...(message.taskId ? { taskId: message.taskId } : {}),
    ...(message.contextId ? { contextId: message.contextId } : {}),
    ...(message.metadata ? { metadata: message.metadata } : {}),
  };
}

/** The JSON-RPC 0.3 transport, over the guarded peer HTTP client. */
export function createJsonRpcPeerTransport(opts: { http: PeerHttpClient; requestTimeoutMs: number }): PeerTransport {
  const { http } = opts;

  async function rpc(endpoint: string, method: string, params: Json, signal?: AbortSignal): Promise<unknown> {
    const id = randomUUID();
    const response = await http.request({
      method: "POST",
      url: endpoint,
      // Absent means 0.3 as well; saying it lets a dual-version peer route without guessing.
      headers: { "a2a-version": "0.3" },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      timeoutMs: opts.requestTimeoutMs,
      ...(signal ? { signal } : {}),
    });
    let body: unknown;
    try {
      body = JSON.parse(response.body);
    } catch {
      throw invalid(`${method} response (not JSON)`);
    }
    if (!isObject(body) || body["jsonrpc"] !== "2.0") throw invalid(`${method} response (not JSON-RPC 2.0)`);
    // A peer's answer is stored in our task: nothing deeper than the wire can carry back out.
    if (nestingDepth(body, WIRE_MAX_DEPTH) > WIRE_MAX_DEPTH) throw invalid(`${method} response (nested deeper than ${WIRE_MAX_DEPTH} levels)`);
    const error = body["error"];
    if (isObject(error)) {
      const code = typeof error["code"] === "number" ? error["code"] : 0;
      const message = str(error["message"])?.slice(0, 200) ?? "";
      // -32603 (internal error) may be transient; every other JSON-RPC error is an answer.
      throw new PeerCallError(`the remote agent answered ${method} with JSON-RPC error ${code}${message ? ` (${message})` : ""}`, "rpc", code === -32603, code);
    }
    if (!("result" in body)) throw invalid(`${method} response (no result)`);
    return body["result"];
  }

  return {
    async send(endpoint, message, signal) {
      // Non-blocking: the peer answers with its task at once; we record its id, then poll.
      const result = await rpc(endpoint, "message/send", { message: wireMessage(message), configuration: { blocking: false } }, signal);
      if (isObject(result) && result["kind"] === "message") {
        const reply = parseMessage(result);
        if (!reply) throw invalid("message/send result (message)");
        return { kind: "message", message: reply };
      }
      return { kind: "task", task: parsePeerTask(result) };
    },

    async getTask(endpoint, taskId, signal) {
      return parsePeerTask(await rpc(endpoint, "tasks/get", { id: taskId }, signal));
    },

    async cancelTask(endpoint, taskId, signal) {
      return parsePeerTask(await rpc(endpoint, "tasks/cancel", { id: taskId }, signal));
    },

    close: () => http.close(),
  };
}

/**
 * The peer client of the `a2a.invoke` node: the card is always read over HTTP (the guarded peer HTTP client),
 * then each call goes over the transport its endpoint names.
 */
export function createA2APeerClient(opts: { http: PeerHttpClient; grpc: PeerTransport; requestTimeoutMs: number }): A2APeerClient {
  const { http, grpc } = opts;
  const jsonRpc = createJsonRpcPeerTransport({ http, requestTimeoutMs: opts.requestTimeoutMs });
  const over = (endpoint: string): PeerTransport => (isGrpcEndpoint(endpoint) ? grpc : jsonRpc);
  return {
    async discover(agentCardUrl, signal) {
      const response = await http.request({ method: "GET", url: agentCardUrl, timeoutMs: opts.requestTimeoutMs, ...(signal ? { signal } : {}) });
      let card: unknown;
      try {
        card = JSON.parse(response.body);
      } catch {
        throw invalid("agent card (not JSON)");
      }
      return peerEndpointOf(card, agentCardUrl);
    },
    send: (endpoint, message, signal) => over(endpoint).send(endpoint, message, signal),
    getTask: (endpoint, taskId, signal) => over(endpoint).getTask(endpoint, taskId, signal),
    cancelTask: (endpoint, taskId, signal) => over(endpoint).cancelTask(endpoint, taskId, signal),
    async close() {
      await Promise.all([jsonRpc.close(), grpc.close()]);
    },
  };
}
