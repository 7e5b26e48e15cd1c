/**
 * A2A 0.3 for the peer client (the client half of the 0.3 version module), both shapes: the JSON-RPC JSON (`kind`
 * discriminators, `parts`) and the `a2a.v1` proto, which gRPC carries and HTTP+JSON sends as ProtoJSON (wire facts
 * §2.4). What a peer answers is untrusted input: it is checked field by field and reduced to our PeerTask,
 * dropping what does not fit.
 */
import { create } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import type { Artifact, Message, Part, Role } from "../../domain/a2a-types.js";
import * as pb from "../../gen/a2a/v1/a2a_pb.js";
import { ALL_HISTORY, invalidAnswer, protoJson, readProtoJson } from "../../peer/peer-json.js";
import type { PeerGrpcClient, PeerVersionClient } from "../../peer/peer-version.js";
import type { PeerPushRequest, PeerReply, PeerStreamEvent, PeerTask } from "../../peer/peer-types.js";
import { bindingOfCardName, peerVersionOf, type OfferedInterface } from "../../peer/peer-endpoint.js";
import { UNNAMED_A2A_VERSION } from "../../domain/a2a-version.js";
import { decodePart, encodeMessage, isoOf, taskStateFromProto } from "./v03-proto-codec.js";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

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
        file: {
          ...(uri !== undefined ? { uri } : {}),
          ...(bytes !== undefined ? { bytes } : {}),
          ...(mimeType ? { mimeType } : {}),
          ...(name ? { name } : {}),
        },
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

function parsePeerMessage(raw: unknown): Message | undefined {
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
  if (!id || contextId === undefined || !isObject(status) || typeof status["state"] !== "string")
    throw invalidAnswer("task (id, contextId and status.state are required)");
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
function parsePeerReply(result: unknown): PeerReply {
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
function parsePeerStreamEventV03(raw: unknown): PeerStreamEvent | undefined {
  if (!isObject(raw)) throw invalidAnswer("stream event (not an object)");
  const kind = raw["kind"];
  if (kind === "status-update") {
    const taskId = str(raw["taskId"]);
    const status = raw["status"];
    if (!taskId || !isObject(status) || typeof status["state"] !== "string")
      throw invalidAnswer("status update (taskId and status.state are required)");
    const statusMessage = parsePeerMessage(status["message"]);
    const statusTimestamp = str(status["timestamp"]);
    return {
      kind: "status",
      taskId,
      state: status["state"],
      ...(statusMessage ? { statusMessage } : {}),
      ...(statusTimestamp ? { statusTimestamp } : {}),
    };
  }
  if (kind === "artifact-update") {
    const taskId = str(raw["taskId"]);
    const artifact = parseArtifact(raw["artifact"], 0);
    if (!taskId || !artifact) throw invalidAnswer("artifact update (taskId and artifact are required)");
    return { kind: "artifact", taskId, artifact, append: raw["append"] === true };
  }
  if (kind === "task" || (kind === undefined && "status" in raw && "id" in raw))
    return { kind: "task", task: parsePeerTask(raw) };
  return undefined;
}

/** Our message in the 0.3 JSON shape. */
function wireMessageV03(message: Message): Json {
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

function structOf(value: pb.Message["metadata"]): Record<string, unknown> | undefined {
  return value === undefined ? undefined : (value as Record<string, unknown>);
}

/** Parts the codec cannot decode (an empty oneof, an empty file URI) are dropped, as unknown JSON kinds are. */
function partsOf(parts: readonly pb.Part[]): Part[] {
  return parts.flatMap((p, i) => {
    try {
      return [decodePart(p, `part[${i}]`)];
    } catch {
      return [];
    }
  });
}

function messageFromProto(msg: pb.Message | undefined): Message | undefined {
  if (!msg?.messageId) return undefined;
  const metadata = structOf(msg.metadata);
  return {
    messageId: msg.messageId,
    role: msg.role === pb.Role.USER ? "user" : "agent",
    parts: partsOf(msg.content),
    ...(msg.taskId ? { taskId: msg.taskId } : {}),
    ...(msg.contextId ? { contextId: msg.contextId } : {}),
    ...(metadata ? { metadata } : {}),
  };
}

function artifactOf(a: pb.Artifact, index: number): Artifact {
  const metadata = structOf(a.metadata);
  return {
    artifactId: a.artifactId || `artifact-${index}`,
    ...(a.name ? { name: a.name } : {}),
    ...(a.description ? { description: a.description } : {}),
    parts: partsOf(a.parts),
    ...(metadata ? { metadata } : {}),
  };
}

/** A peer's a2a.v1 Task as our PeerTask. TASK_STATE_UNSPECIFIED (and any number we do not know) reads as "unknown". */
export function peerTaskFromProto(task: pb.Task | undefined): PeerTask {
  if (!task) throw invalidAnswer("task (none)");
  if (!task.id || !task.status) throw invalidAnswer("task (id and status are required)");
  let state: string;
  try {
    state = taskStateFromProto(task.status.state);
  } catch {
    state = "unknown";
  }
  const statusMessage = messageFromProto(task.status.update);
  const statusTimestamp = isoOf(task.status.timestamp);
  return {
    id: task.id,
    contextId: task.contextId,
    state,
    ...(statusMessage ? { statusMessage } : {}),
    ...(statusTimestamp ? { statusTimestamp } : {}),
    artifacts: task.artifacts.map((a, i) => artifactOf(a, i)),
    history: task.history.flatMap((m) => messageFromProto(m) ?? []),
  };
}

/** An a2a.v1 SendMessageResponse (`task` or `msg`) as our reply. */
function peerReplyFromProto(response: pb.SendMessageResponse): PeerReply {
  switch (response.payload.case) {
    case "task":
      return { kind: "task", task: peerTaskFromProto(response.payload.value) };
    case "msg": {
      const reply = messageFromProto(response.payload.value);
      if (!reply) throw invalidAnswer("SendMessage response (message without an id)");
      return { kind: "message", message: reply };
    }
    default:
      throw invalidAnswer("SendMessage response (neither a task nor a message)");
  }
}

// ------------------------------------------------------------------------------------------ requests

/**
 * The 0.3 JSON-RPC `configuration` of a non-blocking send: the peer answers with its task at once; we record its
 * id, then learn what becomes of it. `push`: our callback registered inline; Bearer with the credentials it names,
 * or without any (the peer signs a JWT: peer-types.ts).
 */
function jsonRpcConfiguration(push: PeerPushRequest | undefined): Json {
  return {
    blocking: false,
    ...(push
      ? {
          pushNotificationConfig: {
            url: push.url,
            token: push.token,
            authentication: {
              schemes: ["Bearer"],
              ...(push.credentials !== undefined ? { credentials: push.credentials } : {}),
            },
          },
        }
      : {}),
  };
}

/** The a2a.v1 non-blocking SendMessageRequest (gRPC, and HTTP+JSON as ProtoJSON). */
function sendRequest(message: Message, push: PeerPushRequest | undefined): pb.SendMessageRequest {
  const inline = push
    ? {
        pushNotification: create(pb.PushNotificationConfigSchema, {
          url: push.url,
          token: push.token,
          authentication: create(pb.AuthenticationInfoSchema, {
            schemes: ["Bearer"],
            credentials: push.credentials ?? "",
          }),
        }),
      }
    : {};
  return create(pb.SendMessageRequestSchema, {
    request: encodeMessage(message),
    configuration: create(pb.SendMessageConfigurationSchema, { blocking: false, ...inline }),
  });
}

/** The resource name of a task in a2a.v1 requests. */
const taskName = (taskId: string) => `tasks/${taskId}`;

function grpcClient(transport: Transport): PeerGrpcClient {
  const client = createClient(pb.A2AService, transport);
  return {
    send: async (message, _tenant, push, options) =>
      peerReplyFromProto(await client.sendMessage(sendRequest(message, push), options)),
    // The whole history tells whether a forwarded reply already arrived. history_length 0 means "all" in the
    // v0.3 proto but "none" to peers that read it with 1.0 semantics (the @a2a-js/sdk v0.3 gRPC service does),
    // so ask for the most an int32 can say, which both read as "all".
    getTask: async (taskId, _tenant, options) =>
      peerTaskFromProto(
        await client.getTask(
          create(pb.GetTaskRequestSchema, { name: taskName(taskId), historyLength: ALL_HISTORY }),
          options,
        ),
      ),
    cancelTask: async (taskId, _tenant, options) =>
      peerTaskFromProto(
        await client.cancelTask(create(pb.CancelTaskRequestSchema, { name: taskName(taskId) }), options),
      ),
    // No task stream over gRPC 0.3 here: such a peer is pushed to or polled.
  };
}

/** A2A 0.3 as the peer client speaks it: JSON-RPC (slash methods, 0.3 JSON), HTTP+JSON (`/v1`, a2a.v1 ProtoJSON), gRPC a2a.v1. */
export const v03PeerClient: PeerVersionClient = {
  version: "0.3",
  // Only `tasks/resubscribe` over JSON-RPC: 0.3 HTTP+JSON and gRPC peers are pushed to or polled.
  streams: new Set(["jsonrpc"]),
  card: {
    // The card's `url` serves `preferredTransport` (JSONRPC when absent); `additionalInterfaces` may repeat it. The
    // card's own `protocolVersion` names the version of all of them.
    interfaces(card) {
      const version =
        card["protocolVersion"] === undefined ? UNNAMED_A2A_VERSION : peerVersionOf(card["protocolVersion"]);
      const versionName = String(card["protocolVersion"] ?? UNNAMED_A2A_VERSION);
      const offered: OfferedInterface[] = [];
      if (card["url"] !== undefined) {
        const transport = card["preferredTransport"] ?? "JSONRPC";
        offered.push({
          binding: bindingOfCardName(transport),
          bindingName: String(transport),
          version,
          versionName,
          url: card["url"],
        });
      }
      for (const i of Array.isArray(card["additionalInterfaces"]) ? card["additionalInterfaces"] : []) {
        if (isObject(i))
          offered.push({
            binding: bindingOfCardName(i["transport"]),
            bindingName: String(i["transport"] ?? "?"),
            version,
            versionName,
            url: i["url"],
          });
      }
      return offered;
    },
    // OpenAPI's shape: `{type: "apiKey", in, name}`.
    apiKeySchemes: (card) =>
      Object.values(isObject(card["securitySchemes"]) ? card["securitySchemes"] : {}).flatMap((s) =>
        isObject(s) && s["type"] === "apiKey" ? [{ location: s["in"], name: s["name"] }] : [],
      ),
  },
  jsonRpc: {
    methods: { send: "message/send", get: "tasks/get", cancel: "tasks/cancel", subscribe: "tasks/resubscribe" },
    sendParams: (message, _tenant, push) => ({
      message: wireMessageV03(message),
      configuration: jsonRpcConfiguration(push),
    }),
    getParams: (taskId) => ({ id: taskId }),
    cancelParams: (taskId) => ({ id: taskId }),
    subscribeParams: (taskId) => ({ id: taskId }),
    readReply: (result) => parsePeerReply(result),
    readTask: (result) => parsePeerTask(result),
    readStreamEvent: (result) => parsePeerStreamEventV03(result),
  },
  rest: {
    mediaType: "application/json",
    prefix: () => "/v1",
    sendBody: (message, _tenant, push) => protoJson(pb.SendMessageRequestSchema, sendRequest(message, push)),
    cancelBody: (taskId) => ({ name: taskName(taskId) }),
    readReply: (json, what) => peerReplyFromProto(readProtoJson(pb.SendMessageResponseSchema, json, what)),
    readTask: (json, what) => peerTaskFromProto(readProtoJson(pb.TaskSchema, json, what)),
  },
  grpc: { service: pb.A2AService, client: grpcClient },
  // The fallback shape: a bare Task or a `kind`-tagged event (the SDKs POST the Task).
  claimsPush: () => true,
  readPush: (json) => parsePeerStreamEventV03(json),
};
