import { type DescMessage, type JsonObject, type MessageShape } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import type { CallContext } from "../../auth/call-context.js";
import { DomainError, invalidParams } from "../../domain/errors.js";
import * as lfA2A from "../../gen/lf/a2a/v1/a2a_pb.js";
import { messageFromQuery } from "../query-message.js";
import { restRoute, restStreamRoute, type RestRequest, type RestRoute } from "../version-module.js";
import { readV10, writeTaskPageV10, writeV10, type LfA2ASchemas } from "./v10-json.js";
import type { V10Operations } from "./v10-operations.js";

/** Requests of the 1.0 HTTP+JSON binding: application/a2a+json, application/json accepted. */
const JSON_MEDIA_TYPES = ["application/json", "application/a2a+json"];

type Params = Record<string, string | undefined>;
/** Where a route's request message comes from: the body (required or optional) or the query string. */
type Source = "body" | "optional-body" | "query";

function unary<I extends DescMessage, O extends DescMessage>(
  methods: string,
  path: string,
  name: string,
  source: Source,
  input: I,
  output: O,
  operation: (req: MessageShape<I>, ctx: CallContext) => Promise<MessageShape<O>>,
  write: (schema: O, message: MessageShape<O>) => unknown = writeV10,
): RestRoute {
  return restRoute({
    methods,
    path,
    name,
    decode: (req) => decode(req, input, source),
    operation,
    encode: (message) => write(output, message),
  });
}

/**
 * The A2A 1.0 HTTP+JSON binding (wire facts §5.1) as data: paths without the `/v1` prefix, each also under
 * an optional `/{tenant}/` prefix; bodies, query parameters and responses are ProtoJSON of the `lf.a2a.v1`
 * messages (read strictly); streams are SSE whose `data:` lines are StreamResponse JSON. The tenant always
 * comes from the API key: a different `/{tenant}/` (or body `tenant`) reads as not found. `pb`: a draft that
 * keeps 1.0's paths and shapes (1.1, whose GET /tasks/{id} also reads `?currentGeneration=`) passes its own
 * schemas and operations.
 */
export function v10RestRoutes(ops: V10Operations, pb: LfA2ASchemas = lfA2A): RestRoute[] {
  const routes: RestRoute[] = [
    unary(
      "POST",
      "/message:send",
      "message:send",
      "body",
      pb.SendMessageRequestSchema,
      pb.SendMessageResponseSchema,
      ops.sendMessage,
    ),
    restStreamRoute({
      methods: "POST",
      path: "/message:stream",
      name: "message:stream",
      decode: (req) => decode(req, pb.SendMessageRequestSchema, "body"),
      operation: ops.sendStreamingMessage,
      encode: (event) => writeV10(pb.StreamResponseSchema, event),
    }),
    unary(
      "POST",
      "/tasks/{id}:cancel",
      "tasks:cancel",
      "optional-body",
      pb.CancelTaskRequestSchema,
      pb.TaskSchema,
      ops.cancelTask,
    ),
    // The proto binds GET, the spec's text says POST: both are served.
    restStreamRoute({
      methods: ["GET", "POST"],
      path: "/tasks/{id}:subscribe",
      name: "tasks:subscribe",
      decode: (req) => decode(req, pb.SubscribeToTaskRequestSchema, req.method === "POST" ? "optional-body" : "query"),
      operation: ops.subscribeToTask,
      encode: (event) => writeV10(pb.StreamResponseSchema, event),
    }),
    unary(
      "POST",
      "/tasks/{taskId}/pushNotificationConfigs",
      "pushNotificationConfigs:create",
      "body",
      pb.TaskPushNotificationConfigSchema,
      pb.TaskPushNotificationConfigSchema,
      ops.createTaskPushNotificationConfig,
    ),
    unary(
      "GET",
      "/tasks/{taskId}/pushNotificationConfigs",
      "pushNotificationConfigs:list",
      "query",
      pb.ListTaskPushNotificationConfigsRequestSchema,
      pb.ListTaskPushNotificationConfigsResponseSchema,
      ops.listTaskPushNotificationConfigs,
      writeTaskPageV10,
    ),
    unary(
      "GET",
      "/tasks/{taskId}/pushNotificationConfigs/{id}",
      "pushNotificationConfigs:get",
      "query",
      pb.GetTaskPushNotificationConfigRequestSchema,
      pb.TaskPushNotificationConfigSchema,
      ops.getTaskPushNotificationConfig,
    ),
    unary(
      "DELETE",
      "/tasks/{taskId}/pushNotificationConfigs/{id}",
      "pushNotificationConfigs:delete",
      "query",
      pb.DeleteTaskPushNotificationConfigRequestSchema,
      EmptySchema,
      ops.deleteTaskPushNotificationConfig,
    ),
    unary("GET", "/tasks/{id}", "tasks:get", "query", pb.GetTaskRequestSchema, pb.TaskSchema, ops.getTask),
    unary(
      "GET",
      "/tasks",
      "tasks:list",
      "query",
      pb.ListTasksRequestSchema,
      pb.ListTasksResponseSchema,
      ops.listTasks,
      writeTaskPageV10,
    ),
    unary(
      "GET",
      "/extendedAgentCard",
      "extendedAgentCard",
      "query",
      pb.GetExtendedAgentCardRequestSchema,
      pb.AgentCardSchema,
      ops.getExtendedAgentCard,
    ),
  ];
  // Every route under its plain path and under `/{tenant}`.
  return routes.flatMap((route) => [route, { ...route, path: `/{tenant}${route.path}` }]);
}

/** The request message from the body or the query, with the path's parameters filled in (they must agree). */
function decode<D extends DescMessage>(
  req: RestRequest,
  schema: D,
  source: Source,
): Promise<MessageShape<D>> | MessageShape<D> {
  return source === "query"
    ? messageFromQuery(schema, req.query, req.params)
    : readMessage(req, schema, source === "body", req.params);
}

/** ProtoJSON body → message; an optional body may be empty. The path's task id and tenant are filled in (and must agree). */
async function readMessage<D extends DescMessage>(
  req: RestRequest,
  schema: D,
  required: boolean,
  fromPath: Params,
): Promise<MessageShape<D>> {
  const raw = await req.body();
  let json: JsonObject = {};
  if (raw.length > 0 || required) {
    checkJsonContentType(req);
    const parsed = req.parseJson(raw);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw invalidParams(`the body must be a JSON object (${schema.typeName} in ProtoJSON)`);
    json = parsed as JsonObject;
  }
  for (const [key, value] of Object.entries(fromPath)) {
    if (value === undefined) continue;
    const given = json[key];
    if (given !== undefined && given !== null && given !== "" && given !== value) {
      throw invalidParams(
        `body field "${key}" (${JSON.stringify(given)}) does not match the path (${JSON.stringify(value)})`,
        { path: key },
      );
    }
    json[key] = value;
  }
  return readV10(schema, json, "the body");
}

function checkJsonContentType(req: RestRequest): void {
  if (!JSON_MEDIA_TYPES.includes(req.mediaType)) {
    throw new DomainError(
      "unsupported-media-type",
      `Content-Type must be application/a2a+json or application/json (got "${req.contentType}")`,
    );
  }
}
