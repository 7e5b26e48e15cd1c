import { create, fromJson, toJson, type DescMessage, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { DomainError, invalidParams } from "../../domain/errors.js";
import {
  AgentCardSchema,
  CancelTaskRequestSchema,
  CreateTaskPushNotificationConfigRequestSchema,
  DeleteTaskPushNotificationConfigRequestSchema,
  GetAgentCardRequestSchema,
  GetTaskPushNotificationConfigRequestSchema,
  GetTaskRequestSchema,
  ListTaskPushNotificationConfigRequestSchema,
  ListTaskPushNotificationConfigResponseSchema,
  SendMessageRequestSchema,
  SendMessageResponseSchema,
  StreamResponseSchema,
  TaskPushNotificationConfigSchema,
  TaskSchema,
  TaskSubscriptionRequestSchema,
} from "../../gen/a2a/v1/a2a_pb.js";
import { withoutUnknownFields } from "../proto-json-unknown-fields.js";
import { messageFromQuery } from "../query-message.js";
import { restRoute, restStreamRoute, type RestRequest, type RestRoute } from "../version-module.js";
import type { V03Operations } from "./v03-operations.js";
import { encodeAgentCard } from "./v03-card-codec.js";
import {
  decodeGetTaskRequest,
  decodeSendRequest,
  encodeSendResponse,
  encodeStreamEvent,
  encodeTask,
  formatTaskName,
} from "./v03-proto-codec.js";
import { decodeCreatePushConfigRequest, encodeListPushConfigs, encodeTaskPushConfig } from "./v03-proto-push-codec.js";

/**
 * The A2A v0.3 HTTP+JSON binding (wire facts §2.4) as data: bodies are ProtoJSON of the `a2a.v1` messages,
 * stream events bare StreamResponse JSON in SSE `data:` lines. Decode → 0.3 operations → encode.
 */
export function v03RestRoutes(ops: V03Operations): RestRoute[] {
  const id = (req: RestRequest) => req.params["id"]!;
  return [
    restRoute({
      methods: "POST",
      path: "/v1/message:send",
      name: "message:send",
      decode: async (req) => decodeSendRequest(await readMessage(req, SendMessageRequestSchema, true)),
      operation: ops.sendMessage,
      encode: (task) => toJson(SendMessageResponseSchema, encodeSendResponse(task)),
    }),
    restStreamRoute({
      methods: "POST",
      path: "/v1/message:stream",
      name: "message:stream",
      decode: async (req) => decodeSendRequest(await readMessage(req, SendMessageRequestSchema, true)),
      operation: ops.sendStreamingMessage,
      encode: (event) => toJson(StreamResponseSchema, encodeStreamEvent(event)),
    }),
    restRoute({
      methods: "POST",
      path: "/v1/tasks/{id}:cancel",
      name: "tasks:cancel",
      decode: async (req) => checkNameMatches((await readMessage(req, CancelTaskRequestSchema, false)).name, id(req)),
      operation: ops.cancelTask,
      encode: (task) => toJson(TaskSchema, encodeTask(task)),
    }),
    // The proto binds GET, the spec's table says POST; serve both (as a2a-js does).
    restStreamRoute({
      methods: ["GET", "POST"],
      path: "/v1/tasks/{id}:subscribe",
      name: "tasks:subscribe",
      decode: async (req) =>
        req.method === "POST"
          ? checkNameMatches((await readMessage(req, TaskSubscriptionRequestSchema, false)).name, id(req))
          : (messageFromQuery(TaskSubscriptionRequestSchema, req.query, { name: formatTaskName(id(req)) }), id(req)),
      operation: ops.resubscribe,
      encode: (event) => toJson(StreamResponseSchema, encodeStreamEvent(event)),
    }),
    // The create body is the whole CreateTaskPushNotificationConfigRequest (as both SDKs send it); a bare
    // TaskPushNotificationConfig (the proto's `body: "config"`) is accepted too.
    restRoute({
      methods: "POST",
      path: "/v1/tasks/{id}/pushNotificationConfigs",
      name: "pushNotificationConfigs:create",
      status: 201,
      decode: async (req) => ({
        ...decodeCreatePushConfigRequest(await readCreatePushConfig(req, id(req))),
        path: "config.pushNotificationConfig",
      }),
      operation: ops.setPushConfig,
      encode: (config) => toJson(TaskPushNotificationConfigSchema, encodeTaskPushConfig(config)),
    }),
    restRoute({
      methods: "GET",
      path: "/v1/tasks/{id}/pushNotificationConfigs",
      name: "pushNotificationConfigs:list",
      // Every config fits one page: pageSize and pageToken are read (and checked), not needed.
      decode: (req) => (
        messageFromQuery(ListTaskPushNotificationConfigRequestSchema, req.query, { parent: formatTaskName(id(req)) }),
        id(req)
      ),
      operation: ops.listPushConfigs,
      encode: (configs) => toJson(ListTaskPushNotificationConfigResponseSchema, encodeListPushConfigs(configs)),
    }),
    restRoute({
      methods: "GET",
      path: "/v1/tasks/{id}/pushNotificationConfigs/{configId}",
      name: "pushNotificationConfigs:get",
      decode: (req) => pushConfigRef(req, GetTaskPushNotificationConfigRequestSchema),
      operation: ops.getPushConfig,
      encode: (config) => toJson(TaskPushNotificationConfigSchema, encodeTaskPushConfig(config)),
    }),
    restRoute({
      methods: "DELETE",
      path: "/v1/tasks/{id}/pushNotificationConfigs/{configId}",
      name: "pushNotificationConfigs:delete",
      decode: (req) => pushConfigRef(req, DeleteTaskPushNotificationConfigRequestSchema),
      operation: ops.deletePushConfig,
      encode: () => ({}),
    }),
    restRoute({
      methods: "GET",
      path: "/v1/tasks/{id}",
      name: "tasks:get",
      decode: (req) =>
        decodeGetTaskRequest(messageFromQuery(GetTaskRequestSchema, req.query, { name: formatTaskName(id(req)) })),
      operation: ops.getTask,
      encode: (task) => toJson(TaskSchema, encodeTask(task)),
    }),
    restRoute({
      methods: "GET",
      path: "/v1/card",
      name: "card",
      decode: (req) => void messageFromQuery(GetAgentCardRequestSchema, req.query, {}),
      operation: ops.agentCard,
      encode: (card) => toJson(AgentCardSchema, encodeAgentCard(card)),
    }),
  ];
}

/** ProtoJSON body → message. A required body must be JSON; an optional one may be empty (cancel, subscribe). */
async function readMessage<D extends DescMessage>(
  req: RestRequest,
  schema: D,
  required: boolean,
): Promise<MessageShape<D>> {
  if (required) checkJsonContentType(req);
  const raw = await req.body();
  if (raw.length === 0 && !required) return create(schema);
  if (!required) checkJsonContentType(req);
  return fromProtoJson(schema, req.parseJson(raw) as JsonValue);
}

async function readCreatePushConfig(req: RestRequest, taskId: string) {
  checkJsonContentType(req);
  let json = req.parseJson(await req.body()) as JsonValue;
  if (
    json !== null &&
    typeof json === "object" &&
    !Array.isArray(json) &&
    "pushNotificationConfig" in json &&
    !("config" in json)
  )
    json = { config: json };
  const request = fromProtoJson(CreateTaskPushNotificationConfigRequestSchema, json);
  if (request.parent) checkNameMatches(request.parent, taskId);
  request.parent = formatTaskName(taskId);
  return request;
}

function fromProtoJson<D extends DescMessage>(schema: D, json: JsonValue): MessageShape<D> {
  try {
    return fromJson(schema, withoutUnknownFields(schema, json), { ignoreUnknownFields: false });
  } catch (err) {
    throw invalidParams(
      `the body is not a valid ${schema.typeName} in ProtoJSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/** The config a path names; its query may only repeat what the request message has (nothing but the path's name). */
function pushConfigRef(
  req: RestRequest,
  schema: typeof GetTaskPushNotificationConfigRequestSchema | typeof DeleteTaskPushNotificationConfigRequestSchema,
): { taskId: string; configId: string } {
  const taskId = req.params["id"]!;
  const configId = req.params["configId"]!;
  messageFromQuery(schema, req.query, { name: `${formatTaskName(taskId)}/pushNotificationConfigs/${configId}` });
  return { taskId, configId };
}

/** A body that carries a resource name must name the task in the path; answers the task id. */
function checkNameMatches(name: string, id: string): string {
  if (name && name !== formatTaskName(id))
    throw invalidParams(`name "${name}" does not match the task in the path (${formatTaskName(id)})`, { path: "name" });
  return id;
}

function checkJsonContentType(req: RestRequest): void {
  if (req.mediaType !== "application/json") {
    throw new DomainError("unsupported-media-type", `Content-Type must be application/json (got "${req.contentType}")`);
  }
}
