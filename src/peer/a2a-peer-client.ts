/**
 * A small A2A v0.3 JSON-RPC client for the `a2a.invoke` node: agent card discovery, `message/send`,
 * `tasks/get` and `tasks/cancel`, over the guarded peer HTTP client. Everything a peer answers is
 * untrusted input: it is checked field by field and reduced to our domain shapes (a2a-wire-facts §2).
 *
 * Transport choice: the card's JSON-RPC interface for protocol 0.3 is used, even when the card prefers
 * gRPC or HTTP+JSON (listed in `additionalInterfaces`); a peer without one is refused with a clear error.
 */
import { randomUUID } from "node:crypto";
import type { Artifact, Message, Part, Role } from "../domain/a2a-types.js";
import type { PeerReply, PeerTask } from "../engine/a2a-invoke.js";
import { PeerCallError, type PeerHttpClient } from "./peer-http-client.js";

export interface PeerEndpoint {
  /** The JSON-RPC URL to POST to. */
  endpoint: string;
  name?: string;
}

export interface A2APeerClient {
  discover(agentCardUrl: string, signal?: AbortSignal): Promise<PeerEndpoint>;
  send(endpoint: string, message: Message, signal?: AbortSignal): Promise<PeerReply>;
  getTask(endpoint: string, taskId: string, signal?: AbortSignal): Promise<PeerTask>;
  cancelTask(endpoint: string, taskId: string, signal?: AbortSignal): Promise<PeerTask>;
  close(): Promise<void>;
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

/** The v0.3 JSON-RPC endpoint named by a card (v0.3 `url`/`preferredTransport`/`additionalInterfaces`, or 1.0 `supportedInterfaces`). */
export function jsonRpcEndpointOf(card: unknown, cardUrl: string): PeerEndpoint {
  if (!isObject(card)) throw invalid("agent card (not an object)");
  const candidates: Array<{ url: unknown; transport: unknown; version: unknown }> = [];
  if (card["url"] !== undefined) candidates.push({ url: card["url"], transport: card["preferredTransport"] ?? "JSONRPC", version: card["protocolVersion"] });
  for (const i of Array.isArray(card["additionalInterfaces"]) ? card["additionalInterfaces"] : []) {
    if (isObject(i)) candidates.push({ url: i["url"], transport: i["transport"], version: card["protocolVersion"] });
  }
  for (const i of Array.isArray(card["supportedInterfaces"]) ? card["supportedInterfaces"] : []) {
    if (isObject(i)) candidates.push({ url: i["url"], transport: i["protocolBinding"], version: i["protocolVersion"] });
  }
  const v03 = (version: unknown) => version === undefined || version === "" || (typeof version === "string" && /^0\.3(\.|$)/.test(version));
  const chosen = candidates.find((c) => typeof c.url === "string" && String(c.transport).toUpperCase() === "JSONRPC" && v03(c.version));
  const name = str(card["name"]);
  if (!chosen) {
    const offered = candidates.map((c) => `${String(c.transport)} ${String(c.version ?? "")}`.trim()).join(", ") || "none";
    throw new PeerCallError(`the remote agent offers no A2A 0.3 JSON-RPC interface (it offers: ${offered}); this host calls peers over JSON-RPC 0.3 only`, "unsupported", false);
  }
  let endpoint: string;
  try {
    endpoint = new URL(chosen.url as string, cardUrl).href;
  } catch {
    throw invalid("agent card (its JSON-RPC url is not a URL)");
  }
  return { endpoint, ...(name ? { name } : {}) };
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

export function createA2APeerClient(opts: { http: PeerHttpClient; requestTimeoutMs: number }): A2APeerClient {
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
    async discover(agentCardUrl, signal) {
      const response = await http.request({ method: "GET", url: agentCardUrl, timeoutMs: opts.requestTimeoutMs, ...(signal ? { signal } : {}) });
      let card: unknown;
      try {
        card = JSON.parse(response.body);
      } catch {
        throw invalid("agent card (not JSON)");
      }
      return jsonRpcEndpointOf(card, agentCardUrl);
    },

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
