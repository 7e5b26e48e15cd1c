/**
 * A2A 1.0 (`lf.a2a.v1`) for the peer client: our message out, the peer's task and message back. All three 1.0
 * bindings share it — gRPC carries the proto messages, JSON-RPC and HTTP+JSON their ProtoJSON (normative in
 * 1.0), read here with `fromJson` (unknown fields ignored) and then reduced like a proto.
 *
 * What a peer answers is untrusted input: it is reduced to our PeerTask, dropping what does not fit (parts
 * without content, data that is not an object, messages without an id); a state we do not know reads as
 * "unknown" (the node then keeps waiting).
 */
import { create, fromJson, toJson, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { timestampDate, ValueSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { Artifact, Message, Part } from "../domain/a2a-types.js";
import * as pb from "../gen/lf/a2a/v1/a2a_pb.js";
import { PeerCallError } from "./peer-http-client.js";
import type { PeerReply, PeerStreamEvent, PeerTask } from "./peer-types.js";

/** The most an int32 history length can say: every message (1.0 reads an unset length as "the server's default"). */
export const ALL_HISTORY = 2_147_483_647;

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

function invalid(what: string): PeerCallError {
  return new PeerCallError(`the remote agent sent an invalid ${what}`, "protocol", false);
}

// ------------------------------------------------------------------------------------------ encoding

/** The lf.a2a.v1 (A2A 1.0) encoder the peer client needs; the 1.0 proto codec module satisfies it (core.ts passes it). */
export interface PeerProtoCodecV10 {
  encodeMessage(message: Message): pb.Message;
}

/**
 * The non-blocking SendMessage request: the peer answers with its task at once; we record its id, then learn what
 * becomes of it (push, stream, or poll). `push`: our callback, registered inline so it covers the task's first transition;
 * the token goes both in `token` (sent as X-A2A-Notification-Token by SDKs that keep it) and as Bearer
 * `authentication` (the header 1.0 names), so either reaches the receiver.
 */
export function sendRequestV10(message: Message, codec: PeerProtoCodecV10, tenant: string | undefined, push?: { url: string; token: string }): pb.SendMessageRequest {
  return create(pb.SendMessageRequestSchema, {
    tenant: tenant ?? "",
    message: codec.encodeMessage(message),
    configuration: create(pb.SendMessageConfigurationSchema, {
      returnImmediately: true,
      historyLength: ALL_HISTORY,
      ...(push ? { taskPushNotificationConfig: create(pb.TaskPushNotificationConfigSchema, { tenant: tenant ?? "", url: push.url, token: push.token, authentication: create(pb.AuthenticationInfoSchema, { scheme: "Bearer", credentials: push.token }) }) } : {}),
    }),
  });
}

/** A 1.0 StreamResponse (a stream event or a push body) as our stream event; a message or an empty payload is none. */
export function peerStreamEventFromV10(response: pb.StreamResponse): PeerStreamEvent | undefined {
  switch (response.payload.case) {
    case "task":
      return { kind: "task", task: peerTaskFromV10(response.payload.value) };
    case "statusUpdate": {
      const update = response.payload.value;
      if (!update.taskId || !update.status) throw invalid("status update (taskId and status are required)");
      const statusMessage = messageFromV10(update.status.message);
      const statusTimestamp = isoOf(update.status.timestamp);
      return { kind: "status", taskId: update.taskId, state: STATES.get(update.status.state) ?? "unknown", ...(statusMessage ? { statusMessage } : {}), ...(statusTimestamp ? { statusTimestamp } : {}) };
    }
    case "artifactUpdate": {
      const update = response.payload.value;
      if (!update.taskId || !update.artifact) throw invalid("artifact update (taskId and artifact are required)");
      return { kind: "artifact", taskId: update.taskId, artifact: artifactOf(update.artifact, 0), append: update.append };
    }
    default:
      return undefined;
  }
}

export function subscribeRequestV10(taskId: string, tenant: string | undefined): pb.SubscribeToTaskRequest {
  return create(pb.SubscribeToTaskRequestSchema, { tenant: tenant ?? "", id: taskId });
}

export function getTaskRequestV10(taskId: string, tenant: string | undefined): pb.GetTaskRequest {
  return create(pb.GetTaskRequestSchema, { tenant: tenant ?? "", id: taskId, historyLength: ALL_HISTORY });
}

export function cancelTaskRequestV10(taskId: string, tenant: string | undefined): pb.CancelTaskRequest {
  return create(pb.CancelTaskRequestSchema, { tenant: tenant ?? "", id: taskId });
}

/** ProtoJSON of a request (JSON-RPC params, HTTP+JSON bodies). */
export function protoJson<D extends DescMessage>(schema: D, message: MessageShape<D>): JsonObject {
  return toJson(schema, message) as JsonObject;
}

/** A peer's ProtoJSON as a proto message; unknown fields are ignored, a value of the wrong type is invalid. */
export function readProtoJson<D extends DescMessage>(schema: D, json: unknown, what: string): MessageShape<D> {
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw invalid(`${what} (not a JSON object)`);
  try {
    return fromJson(schema, json as JsonValue, { ignoreUnknownFields: true });
  } catch {
    throw invalid(`${what} (not ${schema.typeName} in ProtoJSON)`);
  }
}

// ------------------------------------------------------------------------------------------ decoding

function isoOf(ts: Timestamp | undefined): string | undefined {
  if (!ts) return undefined;
  const date = timestampDate(ts);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

function decodePart(part: pb.Part): Part | undefined {
  const metadata = part.metadata ? { metadata: part.metadata as Record<string, unknown> } : {};
  const file = { ...(part.mediaType ? { mimeType: part.mediaType } : {}), ...(part.filename ? { name: part.filename } : {}) };
  switch (part.content.case) {
    case "text":
      return { kind: "text", text: part.content.value, ...metadata };
    case "url":
      return part.content.value ? { kind: "file", file: { uri: part.content.value, ...file }, ...metadata } : undefined;
    case "raw":
      return { kind: "file", file: { bytes: Buffer.from(part.content.value).toString("base64"), ...file }, ...metadata };
    case "data": {
      const data = toJson(ValueSchema, part.content.value);
      return typeof data === "object" && data !== null && !Array.isArray(data) ? { kind: "data", data: data as Record<string, unknown>, ...metadata } : undefined;
    }
    default:
      return undefined; // no content: dropped, as unknown JSON part kinds are
  }
}

function partsOf(parts: readonly pb.Part[]): Part[] {
  return parts.flatMap((p) => decodePart(p) ?? []);
}

export function messageFromV10(msg: pb.Message | undefined): Message | undefined {
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
export function peerTaskFromV10(task: pb.Task | undefined): PeerTask {
  if (!task) throw invalid("task (none)");
  if (!task.id || !task.status) throw invalid("task (id and status are required)");
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
export function peerReplyFromV10(response: pb.SendMessageResponse): PeerReply {
  switch (response.payload.case) {
    case "task":
      return { kind: "task", task: peerTaskFromV10(response.payload.value) };
    case "message": {
      const message = messageFromV10(response.payload.value);
      if (!message) throw invalid("SendMessage response (a message without an id)");
      return { kind: "message", message };
    }
    default:
      throw invalid("SendMessage response (neither a task nor a message)");
  }
}
