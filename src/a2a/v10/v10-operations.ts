import { create } from "@bufbuild/protobuf";
import { EmptySchema, type Empty } from "@bufbuild/protobuf/wkt";
import { DomainError } from "../../domain/errors.js";
import type { StreamEvent } from "../../domain/a2a-types.js";
import * as pb from "../../gen/lf/a2a/v1/a2a_pb.js";
import { mapStream } from "../../domain/live-stream.js";
import { oncePerObject } from "../../domain/once-per-object.js";
import type { Logger } from "../../observability/logger.js";
import type { CallContext } from "../../auth/call-context.js";
import type { TaskService, SendParams } from "../task-service.js";
import {
  checkTenant,
  decodeHistoryLength,
  decodeListTasksRequest,
  decodePushConfig,
  decodeSendRequest,
  decodeTaskId,
  encodePushConfig,
  encodeSendResponse,
  encodeStreamEvent,
  encodeTask,
  encodeTaskPage,
} from "./v10-proto-codec.js";

export interface V10OperationsOptions {
  service: TaskService;
  /** OpenWOP RFC 0152: `returnImmediately` needs durable tasks; without them it is an unsupported operation. */
  durableTasks: boolean;
  /** Where a task or event that cannot be encoded is reported (it is skipped, not failing other reads). */
  logger: Logger;
}

/**
 * The A2A 1.0 operations on `lf.a2a.v1` messages, shared by every 1.0 binding: gRPC/Connect/gRPC-Web call
 * them directly, JSON-RPC and HTTP+JSON after reading ProtoJSON (or a path and query) into the same request
 * messages. Each one checks the request's tenant against the caller's, decodes into the version-neutral
 * service call, and encodes the result; the 1.0 semantics live here (historyLength 0 = none, a terminal
 * task refuses SubscribeToTask, returnImmediately needs durable tasks).
 *
 * Streams end where the service's streams end: at a terminal state, and also at an interrupted one
 * (input-required), as in 0.3, the proto's SendStreamingMessage comment, spec §11.7 and the a2a-js server
 * (spec §3.1.2 says terminal only; the facts note the contradiction). A paused task can wait for days; the
 * caller replies with a new SendStreamingMessage, which streams the rest.
 */
/** Each shared stream update as A2A 1.0, encoded once for every stream of its task (one that throws is not kept). */
const encodeOnce = oncePerObject(encodeStreamEvent);

export function v10Operations(options: V10OperationsOptions) {
  const { service } = options;

  function sendParams(req: pb.SendMessageRequest, ctx: CallContext): SendParams {
    checkTenant(req.tenant, ctx.principal);
    const params = decodeSendRequest(req);
    if (!params.blocking && !options.durableTasks) {
      throw new DomainError(
        "unsupported-operation",
        "configuration.returnImmediately needs durable tasks (a2a.durableTasks), which this host does not offer with its current store; this operation is not supported",
        {
          path: "configuration.returnImmediately",
        },
      );
    }
    return params;
  }

  /**
   * Stream events, live when the service's stream is (`domain/live-stream.ts`); one that cannot be encoded is
   * logged and skipped, so the stream goes on. The streams of one task share their update objects (task-service
   * `updatesOf`), so each is encoded once for all of them.
   */
  function encoded(events: AsyncIterable<StreamEvent>): AsyncIterable<pb.StreamResponse> {
    return mapStream(events, (event) => {
      try {
        return encodeOnce(event);
      } catch (err) {
        options.logger.error(
          { err, event: event.kind },
          "a stream event could not be encoded for A2A 1.0; it is skipped",
        );
        return undefined;
      }
    });
  }

  return {
    /** The service's SendParams of a request, checked (also what the 1.1 draft's operations start from). */
    sendParams,

    async sendMessage(req: pb.SendMessageRequest, ctx: CallContext): Promise<pb.SendMessageResponse> {
      return encodeSendResponse(await service.send(sendParams(req, ctx), ctx));
    },

    /** A request that is not valid throws here, before anything is streamed. */
    sendStreamingMessage(req: pb.SendMessageRequest, ctx: CallContext): AsyncIterable<pb.StreamResponse> {
      return encoded(service.streamMessage(sendParams(req, ctx), ctx));
    },

    async getTask(req: pb.GetTaskRequest, ctx: CallContext): Promise<pb.Task> {
      const id = decodeTaskId(req.id);
      checkTenant(req.tenant, ctx.principal, id);
      return encodeTask(await service.getTask(id, decodeHistoryLength(req.historyLength, "historyLength"), ctx));
    },

    async listTasks(req: pb.ListTasksRequest, ctx: CallContext): Promise<pb.ListTasksResponse> {
      checkTenant(req.tenant, ctx.principal);
      return encodeTaskPage(await service.listTasks(decodeListTasksRequest(req), ctx), (task, err) =>
        options.logger.error(
          { err, taskId: task.id },
          "a task could not be encoded for A2A 1.0 ListTasks; it is left out of the page",
        ),
      );
    },

    async cancelTask(req: pb.CancelTaskRequest, ctx: CallContext): Promise<pb.Task> {
      const id = decodeTaskId(req.id);
      checkTenant(req.tenant, ctx.principal, id);
      return encodeTask(await service.cancelTask(id, ctx));
    },

    /** The Task first, then its updates; a terminal task is refused with UnsupportedOperation (1.0). */
    subscribeToTask(req: pb.SubscribeToTaskRequest, ctx: CallContext): AsyncIterable<pb.StreamResponse> {
      const id = decodeTaskId(req.id);
      checkTenant(req.tenant, ctx.principal, id);
      return encoded(service.subscribe(id, ctx, { terminal: "refuse" }));
    },

    async createTaskPushNotificationConfig(
      req: pb.TaskPushNotificationConfig,
      ctx: CallContext,
    ): Promise<pb.TaskPushNotificationConfig> {
      const taskId = decodeTaskId(req.taskId, "taskId");
      checkTenant(req.tenant, ctx.principal, taskId);
      return encodePushConfig(
        await service.setPushConfig(taskId, decodePushConfig(req, "config", taskId), ctx, "config"),
      );
    },

    async getTaskPushNotificationConfig(
      req: pb.GetTaskPushNotificationConfigRequest,
      ctx: CallContext,
    ): Promise<pb.TaskPushNotificationConfig> {
      const taskId = decodeTaskId(req.taskId, "taskId");
      checkTenant(req.tenant, ctx.principal, taskId);
      return encodePushConfig(await service.getPushConfig(taskId, req.id || undefined, ctx));
    },

    /** All of the task's configs in one page (a task has a few at most). */
    async listTaskPushNotificationConfigs(
      req: pb.ListTaskPushNotificationConfigsRequest,
      ctx: CallContext,
    ): Promise<pb.ListTaskPushNotificationConfigsResponse> {
      const taskId = decodeTaskId(req.taskId, "taskId");
      checkTenant(req.tenant, ctx.principal, taskId);
      const configs = await service.listPushConfigs(taskId, ctx);
      return create(pb.ListTaskPushNotificationConfigsResponseSchema, {
        configs: configs.map(encodePushConfig),
        nextPageToken: "",
      });
    },

    async deleteTaskPushNotificationConfig(
      req: pb.DeleteTaskPushNotificationConfigRequest,
      ctx: CallContext,
    ): Promise<Empty> {
      const taskId = decodeTaskId(req.taskId, "taskId");
      checkTenant(req.tenant, ctx.principal, taskId);
      await service.deletePushConfig(taskId, decodeTaskId(req.id, "id"), ctx);
      return create(EmptySchema);
    },

    async getExtendedAgentCard(req: pb.GetExtendedAgentCardRequest, ctx: CallContext): Promise<pb.AgentCard> {
      checkTenant(req.tenant, ctx.principal);
      throw new DomainError(
        "extended-card-not-configured",
        "Extended Agent Card is not configured for this agent (capabilities.extendedAgentCard is false)",
      );
    },
  };
}

export type V10Operations = ReturnType<typeof v10Operations>;
