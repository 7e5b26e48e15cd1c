import {
  pushAuthentication,
  type Artifact,
  type Message,
  type Part,
  type PushNotificationConfig,
  type StreamEvent,
  type Task,
  type TaskPushNotificationConfig,
} from "../../domain/a2a-types.js";
import { invalidParams } from "../../domain/errors.js";
import {
  expectObject,
  isObject,
  optionalBoolean,
  optionalNonNegativeInt,
  optionalObject,
  optionalString,
  optionalStringArray,
  requiredString,
  type JsonObject,
} from "../../domain/json-shape.js";
import type { HistoryLimit } from "../task-view.js";
import type { SendParams } from "../task-service.js";

/**
 * A2A v0.3 JSON objects (types.ts at v0.3.0): decoding with validation, and encoding with `kind`. Members we
 * do not know are ignored (A2A 1.0 §5.7: be liberal where the spec says SHOULD); known members of the wrong
 * type are still refused.
 */
const PART_KINDS = ["text", "file", "data"] as const;

function decodePart(value: unknown, path: string): Part {
  const part = expectObject(value, path);
  const metadata = optionalObject(part, "metadata", path);
  const meta = metadata ? { metadata } : {};
  switch (part["kind"]) {
    case "text": {
      if (typeof part["text"] !== "string") throw invalidParams(`${path}.text must be a string`);
      return { kind: "text", text: part["text"], ...meta };
    }
    case "file": {
      const file = expectObject(part["file"], `${path}.file`);
      const uri = optionalString(file, "uri", `${path}.file`);
      const bytes = optionalString(file, "bytes", `${path}.file`);
      if ((uri === undefined) === (bytes === undefined))
        throw invalidParams(`${path}.file needs exactly one of "uri" or "bytes"`);
      if (bytes !== undefined && !/^[A-Za-z0-9+/=_-]*$/.test(bytes))
        throw invalidParams(`${path}.file.bytes must be base64`);
      const mimeType = optionalString(file, "mimeType", `${path}.file`);
      const name = optionalString(file, "name", `${path}.file`);
      return {
        kind: "file",
        file: {
          ...(uri !== undefined ? { uri } : { bytes }),
          ...(mimeType ? { mimeType } : {}),
          ...(name ? { name } : {}),
        },
        ...meta,
      };
    }
    case "data": {
      return { kind: "data", data: expectObject(part["data"], `${path}.data`), ...meta };
    }
    default:
      throw invalidParams(`${path}.kind must be one of ${PART_KINDS.join(", ")} (got ${JSON.stringify(part["kind"])})`);
  }
}

export function decodeMessage(value: unknown, path = "params.message"): Message {
  const msg = expectObject(value, path);
  if (msg["kind"] !== undefined && msg["kind"] !== "message") throw invalidParams(`${path}.kind must be "message"`);
  const role = msg["role"];
  if (role !== "user" && role !== "agent")
    throw invalidParams(`${path}.role must be "user" or "agent" (got ${JSON.stringify(role)})`);
  const parts = msg["parts"];
  if (!Array.isArray(parts) || parts.length === 0) throw invalidParams(`${path}.parts must be a non-empty array`);
  const taskId = optionalString(msg, "taskId", path);
  const contextId = optionalString(msg, "contextId", path);
  const metadata = optionalObject(msg, "metadata", path);
  const extensions = optionalStringArray(msg, "extensions", path);
  const referenceTaskIds = optionalStringArray(msg, "referenceTaskIds", path);
  return {
    messageId: requiredString(msg, "messageId", path),
    role,
    parts: parts.map((p, i) => decodePart(p, `${path}.parts[${i}]`)),
    ...(taskId ? { taskId } : {}),
    ...(contextId ? { contextId } : {}),
    ...(metadata ? { metadata } : {}),
    ...(extensions ? { extensions } : {}),
    ...(referenceTaskIds ? { referenceTaskIds } : {}),
  };
}

export function decodePushConfig(value: unknown, path: string): PushNotificationConfig {
  const cfg = expectObject(value, path);
  const id = optionalString(cfg, "id", path);
  const token = optionalString(cfg, "token", path);
  const auth = optionalObject(cfg, "authentication", path);
  const authPath = `${path}.authentication`;
  const authentication = auth
    ? pushAuthentication(optionalStringArray(auth, "schemes", authPath), optionalString(auth, "credentials", authPath))
    : {};
  return {
    url: requiredString(cfg, "url", path),
    ...(id ? { id } : {}),
    ...(token ? { token } : {}),
    ...authentication,
  };
}

/** v0.3 historyLength: absent or 0 means the whole history. */
export function v03History(value: number | undefined): HistoryLimit {
  return value === undefined || value === 0 ? undefined : value;
}

export function decodeSendParams(value: unknown): SendParams {
  const params = expectObject(value, "params");
  const config = optionalObject(params, "configuration", "params") ?? {};
  optionalStringArray(config, "acceptedOutputModes", "params.configuration"); // advisory: validated, not enforced
  const push = config["pushNotificationConfig"];
  const metadata = optionalObject(params, "metadata", "params");
  return {
    message: decodeMessage(params["message"]),
    blocking: optionalBoolean(config, "blocking", "params.configuration") !== false,
    history: v03History(optionalNonNegativeInt(config, "historyLength", "params.configuration")),
    ...(push !== undefined && push !== null
      ? { pushNotificationConfig: decodePushConfig(push, "params.configuration.pushNotificationConfig") }
      : {}),
    ...(metadata ? { metadata } : {}),
  };
}

/** TaskQueryParams `{id, historyLength?, metadata?}`, or TaskIdParams (`withHistory` false: a historyLength is an unknown member). */
export function decodeTaskQuery(value: unknown, withHistory: boolean): { id: string; history: HistoryLimit } {
  const params = expectObject(value, "params");
  optionalObject(params, "metadata", "params");
  const history = withHistory ? v03History(optionalNonNegativeInt(params, "historyLength", "params")) : undefined;
  return { id: requiredString(params, "id", "params"), history };
}

/** `tasks/pushNotificationConfig/set` params: a TaskPushNotificationConfig `{taskId, pushNotificationConfig}`. */
export function decodeSetPushConfigParams(value: unknown): { taskId: string; config: PushNotificationConfig } {
  const params = expectObject(value, "params");
  return {
    taskId: requiredString(params, "taskId", "params"),
    config: decodePushConfig(params["pushNotificationConfig"], "params.pushNotificationConfig"),
  };
}

/**
 * Params of `tasks/pushNotificationConfig/get` (`{id, pushNotificationConfigId?}`), `/list` (`{id}`) and
 * `/delete` (`{id, pushNotificationConfigId}`), each with an optional `metadata`.
 */
export function decodePushConfigQuery(
  value: unknown,
  configId: "optional" | "required" | "none",
): { taskId: string; configId?: string } {
  const params = expectObject(value, "params");
  optionalObject(params, "metadata", "params");
  const taskId = requiredString(params, "id", "params");
  if (configId === "none") return { taskId };
  const id =
    configId === "required"
      ? requiredString(params, "pushNotificationConfigId", "params")
      : optionalString(params, "pushNotificationConfigId", "params");
  return { taskId, ...(id ? { configId: id } : {}) };
}

// ------------------------------------------------------------------------------------------ encoding

export function encodeTaskPushConfig(config: TaskPushNotificationConfig): JsonObject {
  return { taskId: config.taskId, pushNotificationConfig: { ...config.pushNotificationConfig } };
}

export function encodeMessage(message: Message): JsonObject {
  return { kind: "message", ...message };
}

function encodeArtifact(artifact: Artifact): JsonObject {
  return { ...artifact };
}

export function encodeTask(task: Task): JsonObject {
  return {
    kind: "task",
    id: task.id,
    contextId: task.contextId,
    status: { ...task.status, ...(task.status.message ? { message: encodeMessage(task.status.message) } : {}) },
    artifacts: task.artifacts.map(encodeArtifact),
    history: task.history.map(encodeMessage),
    metadata: task.metadata,
  };
}

export function encodeStreamEvent(event: StreamEvent): JsonObject {
  switch (event.kind) {
    case "task":
      return encodeTask(event.task);
    case "message":
      return encodeMessage(event.message);
    case "status-update":
      return {
        ...withoutGeneration(event),
        status: { ...event.status, ...(event.status.message ? { message: encodeMessage(event.status.message) } : {}) },
      };
    case "artifact-update":
      return { ...withoutGeneration(event), artifact: encodeArtifact(event.artifact) };
  }
}

/** 0.3 has no generations (the 1.1 draft's): an update's is not part of its JSON. */
function withoutGeneration<E extends { generation?: number }>(event: E): Omit<E, "generation"> {
  const { generation: _generation, ...rest } = event;
  return rest;
}

export { isObject };
