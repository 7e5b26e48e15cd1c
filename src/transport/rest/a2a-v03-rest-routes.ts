import { create, fromJson, toJson, type DescMessage, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import type { TaskService } from "../../a2a/task-service.js";
import type { CallContext } from "../../auth/call-context.js";
import { v03History } from "../../a2a/v03/v03-json-codec.js";
import { decodeSendRequest, encodeAgentCard, encodeSendResponse, encodeStreamEvent, encodeTask, formatTaskName } from "../../a2a/v03/v03-proto-codec.js";
import { decodeCreatePushConfigRequest, encodeListPushConfigs, encodeTaskPushConfig } from "../../a2a/v03/v03-proto-push-codec.js";
import type { StreamEvent } from "../../domain/a2a-types.js";
import { DomainError, invalidParams, toDomainError } from "../../domain/errors.js";
import {
  AgentCardSchema,
  CancelTaskRequestSchema,
  CreateTaskPushNotificationConfigRequestSchema,
  ListTaskPushNotificationConfigResponseSchema,
  SendMessageRequestSchema,
  SendMessageResponseSchema,
  StreamResponseSchema,
  TaskPushNotificationConfigSchema,
  TaskSchema,
  TaskSubscriptionRequestSchema,
} from "../../gen/a2a/v1/a2a_pb.js";
import { a2aVersionOf } from "../../a2a/protocol-version.js";
import type { Logger } from "../../observability/logger.js";
import { WIRE_CODES } from "../error-codes.js";
import { mediaTypeOf, pipeToSse, readBody, sendJson, type HttpRequest, type HttpResponse } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";

export interface V03RestRoutesOptions {
  service: TaskService;
  logger: Logger;
  maxBodyBytes: number;
}

/** `{code, message, data?}`: the JSON-RPC code in a bare body (as a2a-js v0.3 answers), the HTTP status from the wire table. */
export function v03RestErrorBody(err: unknown): { status: number; body: { code: number; message: string; data?: Record<string, unknown> } } {
  const domain = toDomainError(err);
  const codes = WIRE_CODES[domain.code];
  return { status: codes.http, body: { code: codes.jsonRpc, message: domain.message, ...(domain.details ? { data: domain.details } : {}) } };
}

/**
 * The A2A v0.3 HTTP+JSON binding (wire facts §2.4): bodies are ProtoJSON of the `a2a.v1` messages, stream
 * events are bare StreamResponse JSON in SSE `data:` lines. Decode → service → encode; no task logic here.
 */
export function addV03RestRoutes(router: HttpRouter, options: V03RestRoutesOptions): void {
  const { service, logger, maxBodyBytes } = options;

  function sendError(res: HttpResponse, err: unknown, route: string): void {
    const domain = toDomainError(err);
    if (domain.code === "internal") logger.error({ err: domain.cause ?? err, route }, "HTTP+JSON request failed");
    const { status, body } = v03RestErrorBody(domain);
    sendJson(res, status, body);
  }

  /** ProtoJSON body → message. A required body must be JSON; an optional one may be empty (cancel, subscribe). */
  async function readMessage<D extends DescMessage>(req: HttpRequest, schema: D, required: boolean): Promise<MessageShape<D>> {
    if (required) checkJsonContentType(req);
    const raw = await readBody(req, maxBodyBytes);
    if (raw.length === 0 && !required) return create(schema);
    if (!required) checkJsonContentType(req);
    let json: JsonValue;
    try {
      json = JSON.parse(raw.toString("utf8")) as JsonValue;
    } catch {
      throw new DomainError("parse-error", "Invalid JSON payload: the body is not valid JSON");
    }
    try {
      return fromJson(schema, json, { ignoreUnknownFields: false });
    } catch (err) {
      throw invalidParams(`the body is not a valid ${schema.typeName} in ProtoJSON: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** A body that carries a resource name must name the task in the path. */
  function checkNameMatches(name: string, id: string): void {
    if (name && name !== formatTaskName(id)) throw invalidParams(`name "${name}" does not match the task in the path (${formatTaskName(id)})`, { path: "name" });
  }

  function sendStream(res: HttpResponse, events: AsyncIterable<StreamEvent>, route: string): Promise<void> {
    return pipeToSse(res, events, {
      encode: (event) => toJson(StreamResponseSchema, encodeStreamEvent(event)),
      // Nothing streamed yet: a plain HTTP error (404 unknown task, 400 bad message...).
      failedBeforeFirst: (err) => sendError(res, err, route),
      errorFrame: (err) => {
        const domain = toDomainError(err);
        if (domain.code === "internal") logger.error({ err: domain.cause ?? err, route }, "HTTP+JSON stream failed");
        return v03RestErrorBody(domain).body;
      },
    });
  }


  type Handler = (req: HttpRequest, res: HttpResponse, params: Record<string, string>, ctx: CallContext) => Promise<void>;
  const route = (name: string, handler: Handler): Handler => async (req, res, params, ctx) => {
    try {
      a2aVersionOf(req); // an A2A-Version we do not serve: 400 (VersionNotSupported, -32009)
      await handler(req, res, params, ctx);
    } catch (err) {
      if (!res.headersSent) sendError(res, err, name);
      else res.end();
    }
  };

  router.add(
    "POST",
    "/v1/message:send",
    route("message:send", async (req, res, _params, ctx) => {
      const params = decodeSendRequest(await readMessage(req, SendMessageRequestSchema, true));
      sendJson(res, 200, toJson(SendMessageResponseSchema, encodeSendResponse(await service.sendMessage(params, ctx))));
    }),
  );
  router.add(
    "POST",
    "/v1/message:stream",
    route("message:stream", async (req, res, _params, ctx) => {
      const params = decodeSendRequest(await readMessage(req, SendMessageRequestSchema, true));
      await sendStream(res, service.streamMessage(params, ctx), "message:stream");
    }),
  );
  router.add(
    "POST",
    "/v1/tasks/{id}:cancel",
    route("tasks:cancel", async (req, res, { id }, ctx) => {
      checkNameMatches((await readMessage(req, CancelTaskRequestSchema, false)).name, id!);
      sendJson(res, 200, toJson(TaskSchema, encodeTask(await service.cancelTask(id!, ctx))));
    }),
  );
  // The proto binds GET, the spec's table says POST; serve both (as a2a-js does).
  router.add(
    ["GET", "POST"],
    "/v1/tasks/{id}:subscribe",
    route("tasks:subscribe", async (req, res, { id }, ctx) => {
      if (req.method === "POST") checkNameMatches((await readMessage(req, TaskSubscriptionRequestSchema, false)).name, id!);
      await sendStream(res, service.subscribe(id!, ctx), "tasks:subscribe");
    }),
  );
  // Push configs. The create body is the whole CreateTaskPushNotificationConfigRequest (as both SDKs send
  // it); a bare TaskPushNotificationConfig (the proto's `body: "config"`) is accepted too.
  router.add(
    "POST",
    "/v1/tasks/{id}/pushNotificationConfigs",
    route("pushNotificationConfigs:create", async (req, res, { id }, ctx) => {
      checkJsonContentType(req);
      let json: JsonValue;
      try {
        json = JSON.parse((await readBody(req, maxBodyBytes)).toString("utf8")) as JsonValue;
      } catch {
        throw new DomainError("parse-error", "Invalid JSON payload: the body is not valid JSON");
      }
      if (json !== null && typeof json === "object" && !Array.isArray(json) && "pushNotificationConfig" in json && !("config" in json)) json = { config: json };
      let request: MessageShape<typeof CreateTaskPushNotificationConfigRequestSchema>;
      try {
        request = fromJson(CreateTaskPushNotificationConfigRequestSchema, json, { ignoreUnknownFields: false });
      } catch (err) {
        throw invalidParams(`the body is not a valid ${CreateTaskPushNotificationConfigRequestSchema.typeName} in ProtoJSON: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (request.parent) checkNameMatches(request.parent, id!);
      request.parent = formatTaskName(id!);
      const { taskId, config } = decodeCreatePushConfigRequest(request);
      const created = await service.setPushConfig(taskId, config, ctx, "config.pushNotificationConfig");
      sendJson(res, 201, toJson(TaskPushNotificationConfigSchema, encodeTaskPushConfig(created)));
    }),
  );
  router.add(
    "GET",
    "/v1/tasks/{id}/pushNotificationConfigs",
    route("pushNotificationConfigs:list", async (_req, res, { id }, ctx) => {
      sendJson(res, 200, toJson(ListTaskPushNotificationConfigResponseSchema, encodeListPushConfigs(await service.listPushConfigs(id!, ctx))));
    }),
  );
  router.add(
    "GET",
    "/v1/tasks/{id}/pushNotificationConfigs/{configId}",
    route("pushNotificationConfigs:get", async (_req, res, { id, configId }, ctx) => {
      sendJson(res, 200, toJson(TaskPushNotificationConfigSchema, encodeTaskPushConfig(await service.getPushConfig(id!, configId!, ctx))));
    }),
  );
  router.add(
    "DELETE",
    "/v1/tasks/{id}/pushNotificationConfigs/{configId}",
    route("pushNotificationConfigs:delete", async (_req, res, { id, configId }, ctx) => {
      await service.deletePushConfig(id!, configId!, ctx);
      sendJson(res, 200, {});
    }),
  );
  router.add(
    "GET",
    "/v1/tasks/{id}",
    route("tasks:get", async (req, res, { id }, ctx) => {
      const history = historyQuery(req);
      sendJson(res, 200, toJson(TaskSchema, encodeTask(await service.getTask(id!, history, ctx))));
    }),
  );
  router.add(
    "GET",
    "/v1/card",
    route("card", async (_req, res) => sendJson(res, 200, toJson(AgentCardSchema, encodeAgentCard(service.agentCard)))),
  );
}

function checkJsonContentType(req: HttpRequest): void {
  const type = mediaTypeOf(req);
  if (type !== "application/json") {
    throw new DomainError("content-type-not-supported", `Content-Type must be application/json (got "${req.headers["content-type"] ?? ""}")`);
  }
}

/** `?historyLength=n`: absent or 0 = the whole history (v0.3). */
function historyQuery(req: HttpRequest) {
  const raw = new URL(req.url ?? "/", "http://host").searchParams.get("historyLength");
  if (raw === null || raw === "") return undefined;
  if (!/^\d{1,9}$/.test(raw)) throw invalidParams(`historyLength must be a non-negative integer (got ${JSON.stringify(raw)})`, { path: "historyLength" });
  return v03History(Number(raw));
}
