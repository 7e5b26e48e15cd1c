/**
 * A2A 0.3 for the peer client, both shapes: the JSON-RPC JSON (`kind` discriminators, `parts`) and the `a2a.v1`
 * proto, which gRPC carries and HTTP+JSON sends as ProtoJSON (wire facts §2.4). What a peer answers is untrusted
 * input: it is checked field by field and reduced to our PeerTask, dropping what does not fit.
 *
 * The a2a.v1 part, message and state conversions are the A2A 0.3 codec's, handed in by core.ts
 * (`PeerProtoCodec`), so peer does not import wire codecs.
 */
import { nestingDepth, WIRE_MAX_DEPTH } from "../domain/json-input.js";
import type { Artifact, Message, Part, Role } from "../domain/a2a-types.js";
import type * as pb from "../gen/a2a/v1/a2a_pb.js";
import { Role as ProtoRole } from "../gen/a2a/v1/a2a_pb.js";
import { PeerCallError } from "./peer-http-client.js";
import type { PeerReply, PeerStreamEvent, PeerTask } from "./peer-types.js";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

export function invalidAnswer(what: string): PeerCallError {
  return new PeerCallError(`the remote agent sent an invalid ${what}`, "protocol", false);
}

/** A peer's JSON body (JSON-RPC envelope, ProtoJSON): parsed, and no deeper than the wire may carry back out. */
export function parsePeerJson(text: string, what: string): unknown {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidAnswer(`${what} (not JSON)`);
  }
  // A peer's answer is stored in our task: nothing deeper than the wire can carry back out.
  if (nestingDepth(body, WIRE_MAX_DEPTH) > WIRE_MAX_DEPTH) throw invalidAnswer(`${what} (nested deeper than ${WIRE_MAX_DEPTH} levels)`);
  return body;
}

// ------------------------------------------------------------------------------------------ 0.3 JSON

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

export function parsePeerMessage(raw: unknown): Message | undefined {
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

/** A 0.3 JSON Task (JSON-RPC) as our PeerTask. */
export function parsePeerTask(raw: unknown): PeerTask {
  if (!isObject(raw)) throw invalidAnswer("task (not an object)");
  const id = str(raw["id"]);
  const contextId = str(raw["contextId"]);
  const status = raw["status"];
  if (!id || contextId === undefined || !isObject(status) || typeof status["state"] !== "string") throw invalidAnswer("task (id, contextId and status.state are required)");
  const statusMessage = parsePeerMessage(status["message"]);
  const statusTimestamp = str(status["timestamp"]);
  return {
    id,
    contextId,
    state: status["state"],
    ...(statusMessage ? { statusMessage } : {}),
    ...(statusTimestamp ? { statusTimestamp } : {}),
    artifacts: Array.isArray(raw["artifacts"]) ? raw["artifacts"].flatMap((a, i) => parseArtifact(a, i) ?? []) : [],
    history: Array.isArray(raw["history"]) ? raw["history"].flatMap((m) => parsePeerMessage(m) ?? []) : [],
  };
}

/** A 0.3 `message/send` result (a bare Task or Message, told apart by `kind`) as our reply. */
export function parsePeerReply(result: unknown): PeerReply {
  if (isObject(result) && result["kind"] === "message") {
    const reply = parsePeerMessage(result);
    if (!reply) throw invalidAnswer("message/send result (message)");
    return { kind: "message", message: reply };
  }
  return { kind: "task", task: parsePeerTask(result) };
}

/**
 * A 0.3 JSON stream event or push body (`tasks/resubscribe` results, a0.3 webhook POST): a Task (with or without
 * `kind`), a `status-update` or an `artifact-update`; a message or anything else is none.
 */
export function parsePeerStreamEventV03(raw: unknown): PeerStreamEvent | undefined {
  if (!isObject(raw)) throw invalidAnswer("stream event (not an object)");
  const kind = raw["kind"];
  if (kind === "status-update") {
    const taskId = str(raw["taskId"]);
    const status = raw["status"];
    if (!taskId || !isObject(status) || typeof status["state"] !== "string") throw invalidAnswer("status update (taskId and status.state are required)");
    const statusMessage = parsePeerMessage(status["message"]);
    const statusTimestamp = str(status["timestamp"]);
    return { kind: "status", taskId, state: status["state"], ...(statusMessage ? { statusMessage } : {}), ...(statusTimestamp ? { statusTimestamp } : {}) };
  }
  if (kind === "artifact-update") {
    const taskId = str(raw["taskId"]);
    const artifact = parseArtifact(raw["artifact"], 0);
    if (!taskId || !artifact) throw invalidAnswer("artifact update (taskId and artifact are required)");
    return { kind: "artifact", taskId, artifact, append: raw["append"] === true };
  }
  if (kind === "task" || (kind === undefined && "status" in raw && "id" in raw)) return { kind: "task", task: parsePeerTask(raw) };
  return undefined;
}

/** Our message in the 0.3 JSON shape. */
export function wireMessageV03(message: Message): Json {
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

// ------------------------------------------------------------------------------------------ a2a.v1 proto

/** The a2a.v1 (A2A 0.3) proto conversions the peer client needs; the 0.3 proto codec module satisfies it. */
export interface PeerProtoCodec {
  /** Throws on a part it cannot decode (the part is then dropped). */
  decodePart(part: pb.Part, path: string): Part;
  encodeMessage(message: Message): pb.Message;
  /** Throws on TASK_STATE_UNSPECIFIED or an unknown number (read as "unknown"). */
  taskStateFromProto(state: pb.TaskState): string;
  isoOf(timestamp: pb.TaskStatus["timestamp"]): string | undefined;
}

function structOf(value: pb.Message["metadata"]): Record<string, unknown> | undefined {
  return value === undefined ? undefined : (value as Record<string, unknown>);
}

/** Parts the codec cannot decode (an empty oneof, an empty file URI) are dropped, as unknown JSON kinds are. */
function partsOf(parts: readonly pb.Part[], codec: PeerProtoCodec): Part[] {
  return parts.flatMap((p, i) => {
    try {
      return [codec.decodePart(p, `part[${i}]`)];
    } catch {
      return [];
    }
  });
}

export function messageFromProto(msg: pb.Message | undefined, codec: PeerProtoCodec): Message | undefined {
  if (!msg?.messageId) return undefined;
  const metadata = structOf(msg.metadata);
  return {
    messageId: msg.messageId,
    role: msg.role === ProtoRole.USER ? "user" : "agent",
    parts: partsOf(msg.content, codec),
    ...(msg.taskId ? { taskId: msg.taskId } : {}),
    ...(msg.contextId ? { contextId: msg.contextId } : {}),
    ...(metadata ? { metadata } : {}),
  };
}

function artifactOf(a: pb.Artifact, index: number, codec: PeerProtoCodec): Artifact {
  const metadata = structOf(a.metadata);
  return {
    artifactId: a.artifactId || `artifact-${index}`,
    ...(a.name ? { name: a.name } : {}),
    ...(a.description ? { description: a.description } : {}),
    parts: partsOf(a.parts, codec),
    ...(metadata ? { metadata } : {}),
  };
}

/** A peer's a2a.v1 Task as our PeerTask. TASK_STATE_UNSPECIFIED (and any number we do not know) reads as "unknown". */
export function peerTaskFromProto(task: pb.Task | undefined, codec: PeerProtoCodec): PeerTask {
  if (!task) throw invalidAnswer("task (none)");
  if (!task.id || !task.status) throw invalidAnswer("task (id and status are required)");
  let state: string;
  try {
    state = codec.taskStateFromProto(task.status.state);
  } catch {
    state = "unknown";
  }
  const statusMessage = messageFromProto(task.status.update, codec);
  const statusTimestamp = codec.isoOf(task.status.timestamp);
  return {
    id: task.id,
    contextId: task.contextId,
    state,
    ...(statusMessage ? { statusMessage } : {}),
    ...(statusTimestamp ? { statusTimestamp } : {}),
    artifacts: task.artifacts.map((a, i) => artifactOf(a, i, codec)),
    history: task.history.flatMap((m) => messageFromProto(m, codec) ?? []),
  };
}

/** An a2a.v1 SendMessageResponse (`task` or `msg`) as our reply. */
export function peerReplyFromProto(response: pb.SendMessageResponse, codec: PeerProtoCodec): PeerReply {
  switch (response.payload.case) {
    case "task":
      return { kind: "task", task: peerTaskFromProto(response.payload.value, codec) };
    case "msg": {
      const reply = messageFromProto(response.payload.value, codec);
      if (!reply) throw invalidAnswer("SendMessage response (message without an id)");
      return { kind: "message", message: reply };
    }
    default:
      throw invalidAnswer("SendMessage response (neither a task nor a message)");
  }
}
