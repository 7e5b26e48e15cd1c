import { create, fromJson, toJson, type DescEnum, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate, ValueSchema, type Timestamp, type Value } from "@bufbuild/protobuf/wkt";
import type { Principal } from "../../auth/principal.js";
import {
  pushAuthentication,
  type Artifact,
  type Message,
  type Part,
  type PushNotificationConfig,
  type StreamEvent,
  type Task,
  type TaskPushNotificationConfig,
  type TaskStatus,
} from "../../domain/a2a-types.js";
import { wireSafeObject } from "../../domain/json-input.js";
import { DomainError, invalidParams, taskNotFound } from "../../domain/errors.js";
import type { A2ATaskStateValue } from "../../domain/run-status.js";
import * as pb from "../../gen/lf/a2a/v1/a2a_pb.js";
import type { SendParams, SendResult } from "../task-service.js";
import type { ListTasksQuery, TaskPage } from "../task-list.js";
import type { HistoryLimit } from "../task-view.js";

/**
 * A2A v1.0 as the `lf.a2a.v1` protobuf messages: gRPC, Connect and gRPC-Web directly, and JSON-RPC and
 * HTTP+JSON through ProtoJSON (normative in 1.0), so every 1.0 binding decodes and validates the same way.
 * Decoding checks what the proto's types cannot (required fields, enum zero values, empty oneofs); paths in
 * error messages use the ProtoJSON names. The domain keeps the v0.3-style shapes; this is the only place
 * that knows the 1.0 ones (`TASK_STATE_CANCELED`, flat parts, plain ids, flattened push configs).
 */

// ------------------------------------------------------------------------------------------ enums

const STATE_TO_PROTO: Record<A2ATaskStateValue, pb.TaskState> = {
  submitted: pb.TaskState.SUBMITTED,
  working: pb.TaskState.WORKING,
  "input-required": pb.TaskState.INPUT_REQUIRED,
  "auth-required": pb.TaskState.AUTH_REQUIRED,
  completed: pb.TaskState.COMPLETED,
  failed: pb.TaskState.FAILED,
  canceled: pb.TaskState.CANCELED,
  rejected: pb.TaskState.REJECTED,
};

const STATE_FROM_PROTO = new Map<pb.TaskState, A2ATaskStateValue>(
  Object.entries(STATE_TO_PROTO).map(([k, v]) => [v, k as A2ATaskStateValue]),
);

export function taskStateToV10(state: A2ATaskStateValue): pb.TaskState {
  return STATE_TO_PROTO[state];
}

/** The ProtoJSON name (`TASK_STATE_CANCELED`) of a stored state. */
export function taskStateNameV10(state: A2ATaskStateValue): string {
  return pb.TaskStateSchema.value[STATE_TO_PROTO[state]]!.name;
}

export function taskStateFromV10(state: pb.TaskState, path: string): A2ATaskStateValue {
  const value = STATE_FROM_PROTO.get(state);
  if (!value)
    throw invalidParams(
      `${path} must be a known TaskState other than TASK_STATE_UNSPECIFIED (got ${enumName(pb.TaskStateSchema, state)})`,
      { path },
    );
  return value;
}

function enumName(schema: DescEnum, value: number): string {
  return schema.value[value]?.name ?? String(value);
}

function roleFromV10(role: pb.Role, path: string): Message["role"] {
  if (role === pb.Role.USER) return "user";
  if (role === pb.Role.AGENT) return "agent";
  throw invalidParams(`${path} must be ROLE_USER or ROLE_AGENT (got ${enumName(pb.RoleSchema, role)})`, { path });
}

// ------------------------------------------------------------------------------------------ tenants

/**
 * The proto `tenant` fields and the REST `/{tenant}/` prefix never choose a tenant: the API key does. An
 * explicit tenant other than the caller's reads as not found (a task id names the task that is not found).
 */
export function checkTenant(requested: string | undefined, principal: Principal, taskId?: string): void {
  if (!requested || requested === principal.tenant) return;
  if (taskId !== undefined) throw taskNotFound(taskId);
  throw new DomainError("not-found", `tenant ${JSON.stringify(requested.slice(0, 64))} not found`, {
    tenant: requested.slice(0, 64),
  });
}

// ------------------------------------------------------------------------------------------ decoding

function decodePart(part: pb.Part, path: string): Part {
  const metadata = part.metadata as Record<string, unknown> | undefined;
  const meta = metadata ? { metadata } : {};
  const file = {
    ...(part.mediaType ? { mimeType: part.mediaType } : {}),
    ...(part.filename ? { name: part.filename } : {}),
  };
  switch (part.content.case) {
    case "text":
      return { kind: "text", text: part.content.value, ...meta };
    case "url":
      if (!part.content.value) throw invalidParams(`${path}.url must be a non-empty string`, { path: `${path}.url` });
      return { kind: "file", file: { uri: part.content.value, ...file }, ...meta };
    case "raw":
      return { kind: "file", file: { bytes: Buffer.from(part.content.value).toString("base64"), ...file }, ...meta };
    case "data": {
      const data = jsonOfValue(part.content.value, `${path}.data`);
      if (typeof data !== "object" || data === null || Array.isArray(data)) {
        throw invalidParams(
          `${path}.data must be a JSON object on this agent (workflow inputs and replies are objects)`,
          { path: `${path}.data` },
        );
      }
      return { kind: "data", data: data as Record<string, unknown>, ...meta };
    }
    default:
      throw invalidParams(`${path} has no content: set one of "text", "raw", "url" or "data"`, { path });
  }
}

export function decodeMessage(msg: pb.Message | undefined, path = "message"): Message {
  if (!msg) throw invalidParams(`${path} is required`, { path });
  if (!msg.messageId)
    throw invalidParams(`${path}.messageId must be a non-empty string`, { path: `${path}.messageId` });
  const role = roleFromV10(msg.role, `${path}.role`);
  if (msg.parts.length === 0)
    throw invalidParams(`${path}.parts must be a non-empty list of parts`, { path: `${path}.parts` });
  const metadata = msg.metadata as Record<string, unknown> | undefined;
  return {
    messageId: msg.messageId,
    role,
    parts: msg.parts.map((p, i) => decodePart(p, `${path}.parts[${i}]`)),
    ...(msg.taskId ? { taskId: msg.taskId } : {}),
    ...(msg.contextId ? { contextId: msg.contextId } : {}),
    ...(metadata ? { metadata } : {}),
    ...(msg.extensions.length > 0 ? { extensions: [...msg.extensions] } : {}),
    ...(msg.referenceTaskIds.length > 0 ? { referenceTaskIds: [...msg.referenceTaskIds] } : {}),
  };
}

/**
 * A v1.0 TaskPushNotificationConfig (flat: url, token, authentication{scheme, credentials}) as the domain
 * config, marked as registered over 1.0 so deliveries use the 1.0 body. `taskId`, when set, must agree.
 */
export function decodePushConfig(
  cfg: pb.TaskPushNotificationConfig,
  path: string,
  taskId?: string,
): PushNotificationConfig {
  if (!cfg.url) throw invalidParams(`${path}.url must be a non-empty string`, { path: `${path}.url` });
  if (taskId !== undefined && cfg.taskId && cfg.taskId !== taskId) {
    throw invalidParams(`${path}.taskId "${cfg.taskId}" does not match the task ${taskId}`, { path: `${path}.taskId` });
  }
  const auth = cfg.authentication;
  return {
    url: cfg.url,
    ...(cfg.id ? { id: cfg.id } : {}),
    ...(cfg.token ? { token: cfg.token } : {}),
    ...pushAuthentication(auth?.scheme ? [auth.scheme] : [], auth?.credentials),
    protocolVersion: "1.0",
  };
}

/** v1.0 `optional int32 history_length`: unset = all, 0 = none, n = the last n. */
export function decodeHistoryLength(value: number | undefined, path: string): HistoryLimit {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 0)
    throw invalidParams(`${path} must be a non-negative integer (got ${value})`, { path });
  return value;
}

/** `returnImmediately` is the inverse of v0.3 `blocking`; both become the service's `blocking`. */
export function decodeSendRequest(req: pb.SendMessageRequest): SendParams {
  const config = req.configuration;
  const metadata = req.metadata as Record<string, unknown> | undefined;
  const push = config?.taskPushNotificationConfig;
  return {
    message: decodeMessage(req.message),
    blocking: !(config?.returnImmediately ?? false),
    history: decodeHistoryLength(config?.historyLength, "configuration.historyLength"),
    ...(push ? { pushNotificationConfig: decodePushConfig(push, "configuration.taskPushNotificationConfig") } : {}),
    ...(metadata ? { metadata } : {}),
  };
}

export function decodeTaskId(id: string, path = "id"): string {
  if (!id) throw invalidParams(`${path} must be a non-empty task id`, { path });
  return id;
}

export function decodeListTasksRequest(req: pb.ListTasksRequest): ListTasksQuery {
  const after = req.statusTimestampAfter;
  return {
    ...(req.contextId ? { contextId: req.contextId } : {}),
    ...(req.status !== pb.TaskState.UNSPECIFIED ? { state: taskStateFromV10(req.status, "status") } : {}),
    ...(after ? { statusTimestampAfter: isoOfTimestamp(after, "statusTimestampAfter") } : {}),
    ...(req.pageSize !== undefined ? { pageSize: req.pageSize } : {}),
    ...(req.pageToken ? { pageToken: req.pageToken } : {}),
    history: decodeHistoryLength(req.historyLength, "historyLength"),
    includeArtifacts: req.includeArtifacts ?? false,
  };
}

function isoOfTimestamp(ts: Timestamp, path: string): string {
  const date = timestampDate(ts);
  if (Number.isNaN(date.getTime())) throw invalidParams(`${path} is not a valid timestamp`, { path });
  return date.toISOString();
}

/** A Value from binary may be malformed (a Value with no kind anywhere inside): the caller's fault, not ours. */
function jsonOfValue(value: Value, path: string): JsonValue {
  try {
    return toJson(ValueSchema, value);
  } catch (err) {
    throw invalidParams(
      `${path} is not a valid google.protobuf.Value: ${err instanceof Error ? err.message : String(err)}`,
      { path },
    );
  }
}

// ------------------------------------------------------------------------------------------ encoding

/** Domain metadata is plain JSON in practice; a value too deep for the wire (stored before MAX_INPUT_DEPTH) is replaced by a marker. */
function toStruct(value: Record<string, unknown> | undefined): JsonObject | undefined {
  return value === undefined ? undefined : (wireSafeObject(value) as JsonObject);
}

function timestampOf(iso: string): Timestamp | undefined {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? undefined : timestampFromDate(date);
}

export function encodePart(part: Part): pb.Part {
  const metadata = toStruct(part.metadata);
  switch (part.kind) {
    case "text":
      return create(pb.PartSchema, { content: { case: "text", value: part.text }, metadata });
    case "file": {
      const { uri, bytes, mimeType, name } = part.file;
      const content: pb.Part["content"] =
        uri !== undefined
          ? { case: "url", value: uri }
          : { case: "raw", value: new Uint8Array(Buffer.from(bytes ?? "", "base64")) };
      return create(pb.PartSchema, { content, metadata, mediaType: mimeType ?? "", filename: name ?? "" });
    }
    case "data":
      return create(pb.PartSchema, {
        content: { case: "data", value: fromJson(ValueSchema, toStruct(part.data) as JsonValue) },
        metadata,
      });
  }
}

export function encodeMessage(message: Message): pb.Message {
  return create(pb.MessageSchema, {
    messageId: message.messageId,
    contextId: message.contextId ?? "",
    taskId: message.taskId ?? "",
    role: message.role === "user" ? pb.Role.USER : pb.Role.AGENT,
    parts: message.parts.map(encodePart),
    metadata: toStruct(message.metadata),
    extensions: message.extensions ?? [],
    referenceTaskIds: message.referenceTaskIds ?? [],
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
    state: taskStateToV10(status.state),
    message: status.message ? encodeMessage(status.message) : undefined,
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
        : { case: "message", value: encodeMessage(result.message) },
  });
}

/** A StreamResponse; 1.0 status updates have no `final` (the stream closing says so). */
export function encodeStreamEvent(event: StreamEvent): pb.StreamResponse {
  switch (event.kind) {
    case "task":
      return create(pb.StreamResponseSchema, { payload: { case: "task", value: encodeTask(event.task) } });
    case "message":
      return create(pb.StreamResponseSchema, { payload: { case: "message", value: encodeMessage(event.message) } });
    case "status-update":
      return create(pb.StreamResponseSchema, {
        payload: {
          case: "statusUpdate",
          value: create(pb.TaskStatusUpdateEventSchema, {
            taskId: event.taskId,
            contextId: event.contextId,
            status: encodeTaskStatus(event.status),
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

/** A page of tasks; a task that cannot be encoded is left out and handed to `unencodable`, never failing the page. */
export function encodeTaskPage(page: TaskPage, unencodable: (task: Task, err: unknown) => void): pb.ListTasksResponse {
  const tasks = page.tasks.flatMap((task) => {
    try {
      return [encodeTask(task)];
    } catch (err) {
      unencodable(task, err);
      return [];
    }
  });
  return create(pb.ListTasksResponseSchema, {
    tasks,
    nextPageToken: page.nextPageToken,
    pageSize: page.pageSize,
    totalSize: page.totalSize,
  });
}

/** The flat v1.0 config; only the first v0.3 scheme survives (wire facts §5.7 translation rules). */
export function encodePushConfig(config: TaskPushNotificationConfig): pb.TaskPushNotificationConfig {
  const cfg = config.pushNotificationConfig;
  const scheme = cfg.authentication?.schemes[0];
  return create(pb.TaskPushNotificationConfigSchema, {
    id: cfg.id,
    taskId: config.taskId,
    url: cfg.url,
    token: cfg.token ?? "",
    authentication:
      scheme !== undefined
        ? create(pb.AuthenticationInfoSchema, { scheme, credentials: cfg.authentication?.credentials ?? "" })
        : undefined,
  });
}
