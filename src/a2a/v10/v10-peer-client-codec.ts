/**
 * A2A 1.0 (`lf.a2a.v1`) for the peer client (the client half of the 1.0 version module): our message out, the
 * peer's task and message back. All three 1.0 bindings share it — gRPC carries the proto messages, JSON-RPC and
 * HTTP+JSON their ProtoJSON (normative in 1.0), read with `fromJson` (unknown fields ignored) and then reduced
 * like a proto.
 *
 * What a peer answers is untrusted input: it is reduced to our PeerTask, dropping what does not fit (parts
 * without content, data that is not an object, messages without an id); a state we do not know reads as
 * "unknown" (the node then keeps waiting).
 */
import { create, toJson } from "@bufbuild/protobuf";
import { timestampDate, ValueSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import { createClient, type Transport } from "@connectrpc/connect";
import type { Artifact, Message, Part } from "../../domain/a2a-types.js";
import * as pb from "../../gen/lf/a2a/v1/a2a_pb.js";
import { ALL_HISTORY, invalidAnswer, protoJson, readProtoJson } from "../../peer/peer-json.js";
import type { PeerGrpcClient, PeerVersionClient } from "../../peer/peer-version.js";
import type { PeerPushRequest, PeerReply, PeerStreamEvent, PeerTask } from "../../peer/peer-types.js";
import { bindingOfCardName, peerVersionOf, type OfferedInterface } from "../../peer/peer-endpoint.js";
import { UNNAMED_A2A_VERSION } from "../../domain/a2a-version.js";

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
import { encodeMessage } from "./v10-proto-codec.js";

const STATES = new Map<pb.TaskState, string>([
  [pb.TaskState.SUBMITTED, "submitted"],
  [pb.TaskState.WORKING, "working"],
  [pb.TaskState.INPUT_REQUIRED, "input-required"],
  [pb.TaskState.AUTH_REQUIRED, "auth-required"],
  [pb.TaskState.COMPLETED, "completed"],
  [pb.TaskState.FAILED, "failed"],
  [pb.TaskState.CANCELED, "canceled"],
  [pb.TaskState.REJECTED, "rejected"],
]);

// ------------------------------------------------------------------------------------------ encoding

/**
 * The non-blocking SendMessage request: the peer answers with its task at once; we record its id, then learn what
 * becomes of it (push, stream, or poll). `push`: our callback, registered inline so it covers the task's first transition;
 * the token goes in `token` (sent as X-A2A-Notification-Token by SDKs that keep it) and Bearer `authentication`
 * either carries it too (a static-bearer peer: the header 1.0 names, so either reaches the receiver) or no
 * credentials, which asks the peer to sign a Bearer JWT (peer-types.ts).
 */
function sendRequestV10(
  message: Message,
  tenant: string | undefined,
  push: PeerPushRequest | undefined,
): pb.SendMessageRequest {
  return create(pb.SendMessageRequestSchema, {
    tenant: tenant ?? "",
    message: encodeMessage(message),
    configuration: create(pb.SendMessageConfigurationSchema, {
      returnImmediately: true,
      historyLength: ALL_HISTORY,
      ...(push
        ? {
            taskPushNotificationConfig: create(pb.TaskPushNotificationConfigSchema, {
              tenant: tenant ?? "",
              url: push.url,
              token: push.token,
              authentication: create(pb.AuthenticationInfoSchema, {
                scheme: "Bearer",
                credentials: push.credentials ?? "",
              }),
            }),
          }
        : {}),
    }),
  });
}

/** A 1.0 StreamResponse (a stream event or a push body) as our stream event; a message or an empty payload is none. */
function peerStreamEventFromV10(response: pb.StreamResponse): PeerStreamEvent | undefined {
  switch (response.payload.case) {
    case "task":
      return { kind: "task", task: peerTaskFromV10(response.payload.value) };
    case "statusUpdate": {
      const update = response.payload.value;
      if (!update.taskId || !update.status) throw invalidAnswer("status update (taskId and status are required)");
      const statusMessage = messageFromV10(update.status.message);
      const statusTimestamp = isoOf(update.status.timestamp);
      return {
        kind: "status",
        taskId: update.taskId,
        state: STATES.get(update.status.state) ?? "unknown",
        ...(statusMessage ? { statusMessage } : {}),
        ...(statusTimestamp ? { statusTimestamp } : {}),
      };
    }
    case "artifactUpdate": {
      const update = response.payload.value;
      if (!update.taskId || !update.artifact) throw invalidAnswer("artifact update (taskId and artifact are required)");
      return {
        kind: "artifact",
        taskId: update.taskId,
        artifact: artifactOf(update.artifact, 0),
        append: update.append,
      };
    }
    default:
      return undefined;
  }
}

function subscribeRequestV10(taskId: string, tenant: string | undefined): pb.SubscribeToTaskRequest {
  return create(pb.SubscribeToTaskRequestSchema, { tenant: tenant ?? "", id: taskId });
}

function getTaskRequestV10(taskId: string, tenant: string | undefined): pb.GetTaskRequest {
  return create(pb.GetTaskRequestSchema, { tenant: tenant ?? "", id: taskId, historyLength: ALL_HISTORY });
}

function cancelTaskRequestV10(taskId: string, tenant: string | undefined): pb.CancelTaskRequest {
  return create(pb.CancelTaskRequestSchema, { tenant: tenant ?? "", id: taskId });
}

// ------------------------------------------------------------------------------------------ decoding

function isoOf(ts: Timestamp | undefined): string | undefined {
  if (!ts) return undefined;
  const date = timestampDate(ts);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

function decodePart(part: pb.Part): Part | undefined {
  const metadata = part.metadata ? { metadata: part.metadata as Record<string, unknown> } : {};
  const file = {
    ...(part.mediaType ? { mimeType: part.mediaType } : {}),
    ...(part.filename ? { name: part.filename } : {}),
  };
  switch (part.content.case) {
    case "text":
      return { kind: "text", text: part.content.value, ...metadata };
    case "url":
      return part.content.value ? { kind: "file", file: { uri: part.content.value, ...file }, ...metadata } : undefined;
    case "raw":
      return {
        kind: "file",
        file: { bytes: Buffer.from(part.content.value).toString("base64"), ...file },
        ...metadata,
      };
    case "data": {
      const data = toJson(ValueSchema, part.content.value);
      return typeof data === "object" && data !== null && !Array.isArray(data)
        ? { kind: "data", data: data as Record<string, unknown>, ...metadata }
        : undefined;
    }
    default:
      return undefined; // no content: dropped, as unknown JSON part kinds are
  }
}

function partsOf(parts: readonly pb.Part[]): Part[] {
  return parts.flatMap((p) => decodePart(p) ?? []);
}

function messageFromV10(msg: pb.Message | undefined): Message | undefined {
  if (!msg?.messageId) return undefined;
  return {
    messageId: msg.messageId,
    role: msg.role === pb.Role.USER ? "user" : "agent",
    parts: partsOf(msg.parts),
    ...(msg.taskId ? { taskId: msg.taskId } : {}),
    ...(msg.contextId ? { contextId: msg.contextId } : {}),
    ...(msg.metadata ? { metadata: msg.metadata as Record<string, unknown> } : {}),
  };
}

function artifactOf(a: pb.Artifact, index: number): Artifact {
  return {
    artifactId: a.artifactId || `artifact-${index}`,
    ...(a.name ? { name: a.name } : {}),
    ...(a.description ? { description: a.description } : {}),
    parts: partsOf(a.parts),
    ...(a.metadata ? { metadata: a.metadata as Record<string, unknown> } : {}),
  };
}

/** A peer's 1.0 Task as our PeerTask. */
function peerTaskFromV10(task: pb.Task | undefined): PeerTask {
  if (!task) throw invalidAnswer("task (none)");
  if (!task.id || !task.status) throw invalidAnswer("task (id and status are required)");
  const statusMessage = messageFromV10(task.status.message);
  const statusTimestamp = isoOf(task.status.timestamp);
  return {
    id: task.id,
    contextId: task.contextId,
    state: STATES.get(task.status.state) ?? "unknown",
    ...(statusMessage ? { statusMessage } : {}),
    ...(statusTimestamp ? { statusTimestamp } : {}),
    artifacts: task.artifacts.map(artifactOf),
    history: task.history.flatMap((m) => messageFromV10(m) ?? []),
  };
}

/** A 1.0 SendMessageResponse (`{task}` or `{message}`) as our reply. */
function peerReplyFromV10(response: pb.SendMessageResponse): PeerReply {
  switch (response.payload.case) {
    case "task":
      return { kind: "task", task: peerTaskFromV10(response.payload.value) };
    case "message": {
      const message = messageFromV10(response.payload.value);
      if (!message) throw invalidAnswer("SendMessage response (a message without an id)");
      return { kind: "message", message };
    }
    default:
      throw invalidAnswer("SendMessage response (neither a task nor a message)");
  }
}

// ------------------------------------------------------------------------------------------ the client half

/** Pushed bodies in the 1.0 shape: a StreamResponse's member (camelCase or proto names), never a 0.3 `kind`. */
const PUSH_MEMBERS = ["statusUpdate", "task", "artifactUpdate", "message", "status_update", "artifact_update"];

function grpcClient(transport: Transport): PeerGrpcClient {
  const client = createClient(pb.A2AService, transport);
  return {
    send: async (message, tenant, push, options) =>
      peerReplyFromV10(await client.sendMessage(sendRequestV10(message, tenant, push), options)),
    getTask: async (taskId, tenant, options) =>
      peerTaskFromV10(await client.getTask(getTaskRequestV10(taskId, tenant), options)),
    cancelTask: async (taskId, tenant, options) =>
      peerTaskFromV10(await client.cancelTask(cancelTaskRequestV10(taskId, tenant), options)),
    async *subscribe(taskId, tenant, options) {
      for await (const response of client.subscribeToTask(subscribeRequestV10(taskId, tenant), options))
        yield peerStreamEventFromV10(response);
    },
  };
}

/** A2A 1.0 as the peer client speaks it: JSON-RPC (PascalCase methods), HTTP+JSON and gRPC, all lf.a2a.v1. */
export const v10PeerClient: PeerVersionClient = {
  version: "1.0",
  streams: new Set(["jsonrpc", "http+json", "grpc"]),
  card: {
    // `supportedInterfaces`: binding and version per entry (AgentInterface.protocol_version is required in 1.0; an
    // entry without it is read as the unnamed version, wire facts §5.7), each with its tenant.
    interfaces: (card) =>
      (Array.isArray(card["supportedInterfaces"]) ? card["supportedInterfaces"] : []).flatMap(
        (i: unknown): OfferedInterface[] => {
          if (!isRecord(i)) return [];
          const tenant = typeof i["tenant"] === "string" && i["tenant"] ? i["tenant"] : undefined;
          const unnamed = i["protocolVersion"] === undefined || i["protocolVersion"] === "";
          return [
            {
              binding: bindingOfCardName(i["protocolBinding"]),
              bindingName: String(i["protocolBinding"] ?? "?"),
              version: unnamed ? UNNAMED_A2A_VERSION : peerVersionOf(i["protocolVersion"]),
              versionName: String(i["protocolVersion"] ?? UNNAMED_A2A_VERSION),
              url: i["url"],
              ...(tenant ? { tenant } : {}),
            },
          ];
        },
      ),
    // ProtoJSON: `{apiKeySecurityScheme: {location, name}}`.
    apiKeySchemes: (card) =>
      Object.values(isRecord(card["securitySchemes"]) ? card["securitySchemes"] : {}).flatMap((s) => {
        const scheme = isRecord(s) ? s["apiKeySecurityScheme"] : undefined;
        return isRecord(scheme) ? [{ location: scheme["location"], name: scheme["name"] }] : [];
      }),
  },
  jsonRpc: {
    methods: { send: "SendMessage", get: "GetTask", cancel: "CancelTask", subscribe: "SubscribeToTask" },
    sendParams: (message, tenant, push) =>
      protoJson(pb.SendMessageRequestSchema, sendRequestV10(message, tenant, push)),
    getParams: (taskId, tenant) => protoJson(pb.GetTaskRequestSchema, getTaskRequestV10(taskId, tenant)),
    cancelParams: (taskId, tenant) => protoJson(pb.CancelTaskRequestSchema, cancelTaskRequestV10(taskId, tenant)),
    subscribeParams: (taskId, tenant) =>
      protoJson(pb.SubscribeToTaskRequestSchema, subscribeRequestV10(taskId, tenant)),
    readReply: (result, what) => peerReplyFromV10(readProtoJson(pb.SendMessageResponseSchema, result, what)),
    readTask: (result, what) => peerTaskFromV10(readProtoJson(pb.TaskSchema, result, what)),
    readStreamEvent: (result, what) => peerStreamEventFromV10(readProtoJson(pb.StreamResponseSchema, result, what)),
  },
  rest: {
    mediaType: "application/a2a+json",
    prefix: (tenant) => (tenant ? `/${encodeURIComponent(tenant)}` : ""),
    sendBody: (message, tenant, push) => protoJson(pb.SendMessageRequestSchema, sendRequestV10(message, tenant, push)),
    cancelBody: (taskId, tenant) => protoJson(pb.CancelTaskRequestSchema, cancelTaskRequestV10(taskId, tenant)),
    readReply: (json, what) => peerReplyFromV10(readProtoJson(pb.SendMessageResponseSchema, json, what)),
    readTask: (json, what) => peerTaskFromV10(readProtoJson(pb.TaskSchema, json, what)),
    subscribe: {
      body: (taskId, tenant) => protoJson(pb.SubscribeToTaskRequestSchema, subscribeRequestV10(taskId, tenant)),
      readEvent: (json, what) => peerStreamEventFromV10(readProtoJson(pb.StreamResponseSchema, json, what)),
    },
  },
  grpc: { service: pb.A2AService, client: grpcClient },
  claimsPush: (json) =>
    typeof json === "object" &&
    json !== null &&
    !Array.isArray(json) &&
    !("kind" in json) &&
    PUSH_MEMBERS.some((m) => m in json),
  readPush: (json) => peerStreamEventFromV10(readProtoJson(pb.StreamResponseSchema, json, "push body")),
};
