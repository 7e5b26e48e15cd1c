import { create, type DescEnum, type JsonObject } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  pushAuthentication,
  type Artifact,
  type Message,
  type Part,
  type PushNotificationConfig,
  type StreamEvent,
  type Task,
  type TaskStatus,
} from "../../domain/a2a-types.js";
import { wireSafeObject } from "../../domain/json-input.js";
import { invalidParams } from "../../domain/errors.js";
import type { A2ATaskStateValue } from "../../domain/run-status.js";
import * as pb from "../../gen/a2a/v1/a2a_pb.js";
import type { SendParams, SendResult } from "../task-service.js";
import type { HistoryLimit } from "../task-view.js";
import { v03History } from "./v03-json-codec.js";

/**
 * A2A v0.3 as the `a2a.v1` protobuf messages (gRPC, Connect, gRPC-Web, and the HTTP+JSON binding through
 * ProtoJSON). Decoding validates what the proto's types cannot (required fields, enum zero values, empty
 * oneofs) with the same rules as the v0.3 JSON codec; paths in error messages use the ProtoJSON names.
 */

// ------------------------------------------------------------------------------------------ enums

const STATE_TO_PROTO: Record<A2ATaskStateValue, pb.TaskState> = {
  submitted: pb.TaskState.SUBMITTED,
  working: pb.TaskState.WORKING,
  "input-required": pb.TaskState.INPUT_REQUIRED,
  "auth-required": pb.TaskState.AUTH_REQUIRED,
  completed: pb.TaskState.COMPLETED,
  failed: pb.TaskState.FAILED,
  canceled: pb.TaskState.CANCELLED,
  rejected: pb.TaskState.REJECTED,
};

const STATE_FROM_PROTO = new Map<pb.TaskState, A2ATaskStateValue>(
  Object.entries(STATE_TO_PROTO).map(([k, v]) => [v, k as A2ATaskStateValue]),
);

export function taskStateToProto(state: A2ATaskStateValue): pb.TaskState {
  return STATE_TO_PROTO[state];
}

/** TASK_STATE_UNSPECIFIED ("unknown" in v0.3 JSON) has no domain state, so it is refused like any unknown number. */
export function taskStateFromProto(state: pb.TaskState, path = "status.state"): A2ATaskStateValue {
  const value = STATE_FROM_PROTO.get(state);
  if (!value)
    throw invalidParams(
      `${path} must be a known TaskState other than TASK_STATE_UNSPECIFIED (got ${enumName(pb.TaskStateSchema, state)})`,
      { path },
    );
  return value;
}

/** The proto spelling of an enum value (TASK_STATE_UNSPECIFIED), or the bare number binary input may carry. */
function enumName(schema: DescEnum, value: number): string {
  return schema.value[value]?.name ?? String(value);
}

function roleToProto(role: Message["role"]): pb.Role {
  return role === "user" ? pb.Role.USER : pb.Role.AGENT;
}

function roleFromProto(role: pb.Role, path: string): Message["role"] {
  if (role === pb.Role.USER) return "user";
  if (role === pb.Role.AGENT) return "agent";
  throw invalidParams(`${path} must be ROLE_USER or ROLE_AGENT (got ${enumName(pb.RoleSchema, role)})`, { path });
}

// ------------------------------------------------------------------------------------------ resource names

const TASK_NAME = /^tasks\/([^/]+)$/;
const PUSH_CONFIG_NAME = /^tasks\/([^/]+)\/pushNotificationConfigs\/([^/]+)$/;

export function formatTaskName(taskId: string): string {
  return `tasks/${taskId}`;
}

/** `tasks/{id}` → id. */
export function parseTaskName(name: string, field = "name"): string {
  const id = TASK_NAME.exec(name)?.[1];
  if (!id) throw invalidParams(`${field} must look like tasks/{id} (got ${JSON.stringify(name)})`, { path: field });
  return id;
}

/** `tasks/{id}/pushNotificationConfigs/{configId}` → both ids. */
export function parsePushConfigName(name: string, field = "name"): { taskId: string; configId: string } {
  const found = PUSH_CONFIG_NAME.exec(name);
  if (!found)
    throw invalidParams(
      `${field} must look like tasks/{id}/pushNotificationConfigs/{configId} (got ${JSON.stringify(name)})`,
      { path: field },
    );
  return { taskId: found[1]!, configId: found[2]! };
}

// ------------------------------------------------------------------------------------------ decoding

function structOf(value: JsonObject | undefined): Record<string, unknown> | undefined {
  return value === undefined ? undefined : (value as Record<string, unknown>);
}

export function decodePart(part: pb.Part, path: string): Part {
  const metadata = structOf(part.metadata);
  const meta = metadata ? { metadata } : {};
  switch (part.part.case) {
    case "text":
      return { kind: "text", text: part.part.value, ...meta };
    case "file": {
      const file = part.part.value;
      const { mimeType, name } = file;
      const extra = { ...(mimeType ? { mimeType } : {}), ...(name ? { name } : {}) };
      switch (file.file.case) {
        case "fileWithUri":
          if (!file.file.value)
            throw invalidParams(`${path}.file.fileWithUri must be a non-empty string`, {
              path: `${path}.file.fileWithUri`,
            });
          return { kind: "file", file: { uri: file.file.value, ...extra }, ...meta };
        case "fileWithBytes":
          return { kind: "file", file: { bytes: Buffer.from(file.file.value).toString("base64"), ...extra }, ...meta };
        default:
          throw invalidParams(`${path}.file needs exactly one of "fileWithUri" or "fileWithBytes"`, {
            path: `${path}.file`,
          });
      }
    }
    case "data": {
      const data = structOf(part.part.value.data);
      if (!data) throw invalidParams(`${path}.data.data must be an object`, { path: `${path}.data.data` });
      return { kind: "data", data, ...meta };
    }
    default:
      throw invalidParams(`${path} has no content: set one of "text", "file" or "data"`, { path });
  }
}

export function decodeMessage(msg: pb.Message | undefined, path = "message"): Message {
  if (!msg) throw invalidParams(`${path} is required`, { path });
  if (!msg.messageId)
    throw invalidParams(`${path}.messageId must be a non-empty string`, { path: `${path}.messageId` });
  const role = roleFromProto(msg.role, `${path}.role`);
  if (msg.content.length === 0)
    throw invalidParams(`${path}.content must be a non-empty list of parts`, { path: `${path}.content` });
  const metadata = structOf(msg.metadata);
  return {
    messageId: msg.messageId,
    role,
    parts: msg.content.map((p, i) => decodePart(p, `${path}.content[${i}]`)),
    ...(msg.taskId ? { taskId: msg.taskId } : {}),
    ...(msg.contextId ? { contextId: msg.contextId } : {}),
    ...(metadata ? { metadata } : {}),
    ...(msg.extensions.length > 0 ? { extensions: [...msg.extensions] } : {}),
  };
}

export function decodePushConfig(cfg: pb.PushNotificationConfig, path: string): PushNotificationConfig {
  if (!cfg.url) throw invalidParams(`${path}.url must be a non-empty string`, { path: `${path}.url` });
  return {
    url: cfg.url,
    ...(cfg.id ? { id: cfg.id } : {}),
    ...(cfg.token ? { token: cfg.token } : {}),
    ...pushAuthentication(cfg.authentication?.schemes, cfg.authentication?.credentials),
  };
}

/** proto3 int32 fields cannot be absent; 0 means "all" in v0.3, a negative number is refused. */
export function decodeHistoryLength(value: number, path: string): HistoryLimit {
  if (!Number.isInteger(value) || value < 0)
    throw invalidParams(`${path} must be a non-negative integer (got ${value})`, { path });
  return v03History(value);
}

/**
 * A configuration message that is absent means a blocking send (as in JSON, where `blocking` defaults to
 * true); once present, its `blocking` bool counts as sent, which is how the v0.3 SDKs read it.
 */
export function decodeSendRequest(req: pb.SendMessageRequest): SendParams {
  const config = req.configuration;
  const metadata = structOf(req.metadata);
  return {
    message: decodeMessage(req.request),
    blocking: config ? config.blocking : true,
    history: config ? decodeHistoryLength(config.historyLength, "configuration.historyLength") : undefined,
    ...(config?.pushNotification
      ? { pushNotificationConfig: decodePushConfig(config.pushNotification, "configuration.pushNotification") }
      : {}),
    ...(metadata ? { metadata } : {}),
  };
}

export function decodeGetTaskRequest(req: pb.GetTaskRequest): { id: string; history: HistoryLimit } {
  return { id: parseTaskName(req.name), history: decodeHistoryLength(req.historyLength, "historyLength") };
}

// ------------------------------------------------------------------------------------------ encoding

/** Domain metadata is plain JSON in practice; a value too deep for the wire (stored before MAX_INPUT_DEPTH) is replaced by a marker. */
function toStruct(value: Record<string, unknown> | undefined): JsonObject | undefined {
  return value === undefined ? undefined : (wireSafeObject(value) as JsonObject);
}

function timestampOf(iso: string) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? undefined : timestampFromDate(date);
}

/** The ISO form of a proto Timestamp (for tests and clients of this codec). */
export function isoOf(ts: pb.TaskStatus["timestamp"]): string | undefined {
  return ts ? timestampDate(ts).toISOString() : undefined;
}

export function encodePart(part: Part): pb.Part {
  const metadata = toStruct(part.metadata);
  switch (part.kind) {
    case "text":
      return create(pb.PartSchema, { part: { case: "text", value: part.text }, metadata });
    case "file": {
      const { uri, bytes, mimeType, name } = part.file;
      const file: pb.FilePart["file"] =
        uri !== undefined
          ? { case: "fileWithUri", value: uri }
          : { case: "fileWithBytes", value: new Uint8Array(Buffer.from(bytes ?? "", "base64")) };
      return create(pb.PartSchema, {
        part: { case: "file", value: create(pb.FilePartSchema, { file, mimeType: mimeType ?? "", name: name ?? "" }) },
        metadata,
      });
    }
    case "data":
      return create(pb.PartSchema, {
        part: { case: "data", value: create(pb.DataPartSchema, { data: toStruct(part.data) }) },
        metadata,
      });
  }
}

/** `referenceTaskIds` has no field in the v0.3 proto and is dropped. */
export function encodeMessage(message: Message): pb.Message {
  return create(pb.MessageSchema, {
    messageId: message.messageId,
    contextId: message.contextId ?? "",
    taskId: message.taskId ?? "",
    role: roleToProto(message.role),
    content: message.parts.map(encodePart),
    metadata: toStruct(message.metadata),
    extensions: message.extensions ?? [],
  });
}

export function encodeArtifact(artifact: Artifact): pb.Artifact {
  return create(pb.ArtifactSchema, {
    artifactId: artifact.artifactId,
    name: artifact.name ?? "",
    description: artifact.description ?? "",
    parts: artifact.parts.map(encodePart),
    metadata: toStruct(artifact.metadata),
    extensions: artifact.extensions ?? [],
  });
}

export function encodeTaskStatus(status: TaskStatus): pb.TaskStatus {
  return create(pb.TaskStatusSchema, {
    state: taskStateToProto(status.state),
    update: status.message ? encodeMessage(status.message) : undefined,
    timestamp: timestampOf(status.timestamp),
  });
}

export function encodeTask(task: Task): pb.Task {
  return create(pb.TaskSchema, {
    id: task.id,
    contextId: task.contextId,
    status: encodeTaskStatus(task.status),
    artifacts: task.artifacts.map(encodeArtifact),
    history: task.history.map(encodeMessage),
    metadata: toStruct(task.metadata),
  });
}

export function encodeSendResponse(result: SendResult): pb.SendMessageResponse {
  return create(pb.SendMessageResponseSchema, {
    payload:
      result.kind === "task"
        ? { case: "task", value: encodeTask(result.task) }
        : { case: "msg", value: encodeMessage(result.message) },
  });
}

export function encodeStreamEvent(event: StreamEvent): pb.StreamResponse {
  switch (event.kind) {
    case "task":
      return create(pb.StreamResponseSchema, { payload: { case: "task", value: encodeTask(event.task) } });
    case "message":
      return create(pb.StreamResponseSchema, { payload: { case: "msg", value: encodeMessage(event.message) } });
    case "status-update":
      return create(pb.StreamResponseSchema, {
        payload: {
          case: "statusUpdate",
          value: create(pb.TaskStatusUpdateEventSchema, {
            taskId: event.taskId,
            contextId: event.contextId,
            status: encodeTaskStatus(event.status),
            final: event.final,
            metadata: toStruct(event.metadata),
          }),
        },
      });
    case "artifact-update":
      return create(pb.StreamResponseSchema, {
        payload: {
          case: "artifactUpdate",
          value: create(pb.TaskArtifactUpdateEventSchema, {
            taskId: event.taskId,
            contextId: event.contextId,
            artifact: encodeArtifact(event.artifact),
            append: event.append ?? false,
            lastChunk: event.lastChunk ?? false,
            metadata: toStruct(event.metadata),
          }),
        },
      });
  }
}

export function encodePushConfig(cfg: PushNotificationConfig): pb.PushNotificationConfig {
  return create(pb.PushNotificationConfigSchema, {
    id: cfg.id ?? "",
    url: cfg.url,
    token: cfg.token ?? "",
    authentication: cfg.authentication
      ? create(pb.AuthenticationInfoSchema, {
          schemes: cfg.authentication.schemes,
          credentials: cfg.authentication.credentials ?? "",
        })
      : undefined,
  });
}
