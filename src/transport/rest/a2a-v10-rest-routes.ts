import { ScalarType, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import type { TaskService } from "../../a2a/task-service.js";
import { A2A_VERSION_QUERY, a2aVersionOf, asksForV10 } from "../../a2a/protocol-version.js";
import { readV10, writeTaskPageV10, writeV10 } from "../../a2a/v10/v10-json.js";
import { v10Operations } from "../../a2a/v10/v10-operations.js";
import { DomainError, invalidParams, toDomainError } from "../../domain/errors.js";
import * as pb from "../../gen/lf/a2a/v1/a2a_pb.js";
import type { Logger } from "../../observability/logger.js";
import { restErrorV10 } from "../a2a-v10-errors.js";
import { mediaTypeOf, pipeToSse, readBody, sendJson, type HttpRequest, type HttpResponse } from "../http-io.js";
import { HttpRouter, type RouteHandler, type RouteMatch } from "../http-router.js";

export interface V10RestRoutesOptions {
  service: TaskService;
  logger: Logger;
  maxBodyBytes: number;
  durableTasks: boolean;
}

/** Responses of the 1.0 HTTP+JSON binding (v1.0.1: SHOULD be application/a2a+json). */
const A2A_JSON = "application/a2a+json";
const JSON_MEDIA_TYPES = ["application/json", A2A_JSON];

/**
 * The A2A 1.0 HTTP+JSON binding (wire facts §5.1): paths without the `/v1` prefix, each also under an
 * optional `/{tenant}/` prefix; bodies, query parameters and responses are ProtoJSON of the `lf.a2a.v1`
 * messages (read strictly); streams are SSE whose `data:` lines are StreamResponse JSON; errors are
 * `{"error": {code, status, message, details: [ErrorInfo]}}`. The tenant always comes from the API key:
 * a different `/{tenant}/` (or body `tenant`) reads as not found. These routes live in their own router;
 * `matchA2ARoute` decides, by `A2A-Version`, which router answers a path both could read.
 */
export function createV10RestRouter(options: V10RestRoutesOptions): HttpRouter {
  const { logger, maxBodyBytes } = options;
  const ops = v10Operations({ service: options.service, durableTasks: options.durableTasks });
  const router = new HttpRouter();

  function sendError(res: HttpResponse, err: unknown, route: string): void {
    const domain = toDomainError(err);
    if (domain.code === "internal") logger.error({ err: domain.cause ?? err, route }, "HTTP+JSON (1.0) request failed");
    const { status, body } = restErrorV10(domain);
    sendJson(res, status, body, { "content-type": A2A_JSON });
  }

  function sendMessage(res: HttpResponse, json: JsonObject): void {
    sendJson(res, 200, json, { "content-type": A2A_JSON });
  }

  /** ProtoJSON body → message; an optional body may be empty. The path's task id and tenant are filled in (and must agree). */
  async function readMessage<D extends DescMessage>(req: HttpRequest, schema: D, required: boolean, fromPath: Record<string, string | undefined>): Promise<MessageShape<D>> {
    const raw = await readBody(req, maxBodyBytes);
    let json: JsonObject = {};
    if (raw.length > 0 || required) {
      checkJsonContentType(req);
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw.toString("utf8"));
      } catch {
        throw new DomainError("parse-error", "Invalid JSON payload: the body is not valid JSON");
      }
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw invalidParams(`the body must be a JSON object (${schema.typeName} in ProtoJSON)`);
      json = parsed as JsonObject;
    }
    for (const [key, value] of Object.entries(fromPath)) {
      if (value === undefined) continue;
      const given = json[key];
      if (given !== undefined && given !== null && given !== "" && given !== value) {
        throw invalidParams(`body field "${key}" (${JSON.stringify(given)}) does not match the path (${JSON.stringify(value)})`, { path: key });
      }
      json[key] = value;
    }
    return readV10(schema, json, "the body");
  }

  function stream(res: HttpResponse, events: AsyncIterable<pb.StreamResponse>, route: string): Promise<void> {
    return pipeToSse(res, events, {
      encode: (event) => writeV10(pb.StreamResponseSchema, event),
      // Nothing streamed yet: a plain HTTP error (404 unknown task, 400 terminal task or bad message...).
      failedBeforeFirst: (err) => sendError(res, err, route),
      errorFrame: (err) => {
        const domain = toDomainError(err);
        if (domain.code === "internal") logger.error({ err: domain.cause ?? err, route }, "HTTP+JSON (1.0) stream failed");
        return restErrorV10(domain).body;
      },
    });
  }


  /** Every route under its plain path and under `/{tenant}`; the wrapper checks A2A-Version and shapes errors. */
  function add(methods: string | string[], template: string, name: string, handler: RouteHandler): void {
    const wrapped: RouteHandler = async (req, res, params, ctx) => {
      try {
        a2aVersionOf(req);
        await handler(req, res, params, ctx);
      } catch (err) {
        if (!res.headersSent) sendError(res, err, name);
        else res.end();
      }
    };
    router.add(methods, template, wrapped);
    router.add(methods, `/{tenant}${template}`, wrapped);
  }

  add("POST", "/message:send", "message:send", async (req, res, { tenant }, ctx) => {
    const request = await readMessage(req, pb.SendMessageRequestSchema, true, { tenant });
    sendMessage(res, writeV10(pb.SendMessageResponseSchema, await ops.sendMessage(request, ctx)));
  });
  add("POST", "/message:stream", "message:stream", async (req, res, { tenant }, ctx) => {
    const request = await readMessage(req, pb.SendMessageRequestSchema, true, { tenant });
    await stream(res, ops.sendStreamingMessage(request, ctx), "message:stream");
  });
  add("POST", "/tasks/{id}:cancel", "tasks:cancel", async (req, res, { tenant, id }, ctx) => {
    const request = await readMessage(req, pb.CancelTaskRequestSchema, false, { tenant, id });
    sendMessage(res, writeV10(pb.TaskSchema, await ops.cancelTask(request, ctx)));
  });
  // The proto binds GET, the spec's text says POST: both are served.
  add(["GET", "POST"], "/tasks/{id}:subscribe", "tasks:subscribe", async (req, res, { tenant, id }, ctx) => {
    const request =
      req.method === "POST" ? await readMessage(req, pb.SubscribeToTaskRequestSchema, false, { tenant, id }) : fromQuery(req, pb.SubscribeToTaskRequestSchema, { tenant, id });
    await stream(res, ops.subscribeToTask(request, ctx), "tasks:subscribe");
  });
  add("POST", "/tasks/{taskId}/pushNotificationConfigs", "pushNotificationConfigs:create", async (req, res, { tenant, taskId }, ctx) => {
    const request = await readMessage(req, pb.TaskPushNotificationConfigSchema, true, { tenant, taskId });
    sendMessage(res, writeV10(pb.TaskPushNotificationConfigSchema, await ops.createTaskPushNotificationConfig(request, ctx)));
  });
  add("GET", "/tasks/{taskId}/pushNotificationConfigs", "pushNotificationConfigs:list", async (req, res, { tenant, taskId }, ctx) => {
    const request = fromQuery(req, pb.ListTaskPushNotificationConfigsRequestSchema, { tenant, taskId });
    sendMessage(res, writeTaskPageV10(pb.ListTaskPushNotificationConfigsResponseSchema, await ops.listTaskPushNotificationConfigs(request, ctx)));
  });
  add("GET", "/tasks/{taskId}/pushNotificationConfigs/{id}", "pushNotificationConfigs:get", async (req, res, { tenant, taskId, id }, ctx) => {
    const request = fromQuery(req, pb.GetTaskPushNotificationConfigRequestSchema, { tenant, taskId, id });
    sendMessage(res, writeV10(pb.TaskPushNotificationConfigSchema, await ops.getTaskPushNotificationConfig(request, ctx)));
  });
  add("DELETE", "/tasks/{taskId}/pushNotificationConfigs/{id}", "pushNotificationConfigs:delete", async (req, res, { tenant, taskId, id }, ctx) => {
    const request = fromQuery(req, pb.DeleteTaskPushNotificationConfigRequestSchema, { tenant, taskId, id });
    sendMessage(res, writeV10(EmptySchema, await ops.deleteTaskPushNotificationConfig(request, ctx)));
  });
  add("GET", "/tasks/{id}", "tasks:get", async (req, res, { tenant, id }, ctx) => {
    sendMessage(res, writeV10(pb.TaskSchema, await ops.getTask(fromQuery(req, pb.GetTaskRequestSchema, { tenant, id }), ctx)));
  });
  add("GET", "/tasks", "tasks:list", async (req, res, { tenant }, ctx) => {
    sendMessage(res, writeTaskPageV10(pb.ListTasksResponseSchema, await ops.listTasks(fromQuery(req, pb.ListTasksRequestSchema, { tenant }), ctx)));
  });
  add("GET", "/extendedAgentCard", "extendedAgentCard", async (req, res, { tenant }, ctx) => {
    sendMessage(res, writeV10(pb.AgentCardSchema, await ops.getExtendedAgentCard(fromQuery(req, pb.GetExtendedAgentCardRequestSchema, { tenant }), ctx)));
  });
  return router;
}

/**
 * Query parameters (plus path parameters) as the request message, read like a JSON body: `?historyLength=2`,
 * `?status=TASK_STATE_WORKING`, `?includeArtifacts=true`. Unknown parameters and bad values are refused;
 * `A2A-Version` is the version selector, not a field.
 */
function fromQuery<D extends DescMessage>(req: HttpRequest, schema: D, fromPath: Record<string, string | undefined>): MessageShape<D> {
  const json: JsonObject = {};
  const query = new URL(req.url ?? "/", "http://host").searchParams;
  for (const [name, value] of query) {
    if (name.toLowerCase() === A2A_VERSION_QUERY.toLowerCase()) continue;
    const field = schema.fields.find((f) => f.jsonName === name || f.name === name);
    if (field && fromPath[field.jsonName] !== undefined) throw invalidParams(`query parameter "${name}" is given by the path`, { path: name });
    if (json[name] !== undefined) throw invalidParams(`query parameter "${name}" is given more than once`, { path: name });
    json[name] = field?.fieldKind === "scalar" && field.scalar === ScalarType.BOOL ? boolOf(name, value) : value;
  }
  for (const [key, value] of Object.entries(fromPath)) if (value !== undefined) json[key] = value;
  return readV10(schema, json, "the query");
}

function boolOf(name: string, value: string): JsonValue {
  if (value === "true") return true;
  if (value === "false") return false;
  throw invalidParams(`query parameter "${name}" must be true or false (got ${JSON.stringify(value)})`, { path: name });
}

function checkJsonContentType(req: HttpRequest): void {
  if (!JSON_MEDIA_TYPES.includes(mediaTypeOf(req))) {
    throw new DomainError("content-type-not-supported", `Content-Type must be application/a2a+json or application/json (got "${req.headers["content-type"] ?? ""}")`);
  }
}

/**
 * Which router answers a request. A path like `/v1/tasks/{id}` is a v0.3 route and also a v1.0 route in
 * tenant "v1"; the caller's `A2A-Version` decides (1.0 → the 1.0 routes first, absent/0.3 → the others
 * first), and a path only one router knows goes there whatever the header says.
 */
export function matchA2ARoute(req: HttpRequest, path: string, main: HttpRouter, v10: HttpRouter): RouteMatch {
  const method = req.method ?? "GET";
  const [first, second] = asksForV10(req) ? [v10, main] : [main, v10];
  const a = first.match(method, path);
  if (a && "handler" in a) return a;
  const b = second.match(method, path);
  if (b && "handler" in b) return b;
  return a ?? b;
}

