import { create } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { TaskService as A2AOperations } from "../../a2a/task-service.js";
import type { CallContext } from "../../auth/call-context.js";
import {
  decodeGetTaskRequest,
  decodeSendRequest,
  encodeAgentCard,
  encodeSendResponse,
  encodeStreamEvent,
  encodeTask,
  parsePushConfigName,
  parseTaskName,
} from "../../a2a/v03/v03-proto-codec.js";
import { decodeCreatePushConfigRequest, encodeListPushConfigs, encodeTaskPushConfig } from "../../a2a/v03/v03-proto-push-codec.js";
import type { StreamEvent } from "../../domain/a2a-types.js";
import type { Authenticator } from "../../auth/api-key-authenticator.js";
import type { A2AService } from "../../gen/a2a/v1/a2a_pb.js";
import type { Logger } from "../../observability/logger.js";
import { toConnectError } from "./connect-errors.js";

export interface V03ConnectServiceOptions {
  service: A2AOperations;
  /** Who the caller is, from the request's credentials (the same API keys as every other binding). */
  authenticator: Authenticator;
  logger: Logger;
}

/**
 * `a2a.v1.A2AService` (A2A v0.3) for Connect, gRPC and gRPC-Web: decode → service → encode, nothing else.
 * Every error leaves through `toConnectError`, so the status comes from the one wire table.
 */
export function createV03ConnectService(options: V03ConnectServiceOptions): ServiceImpl<typeof A2AService> {
  const { service, authenticator, logger } = options;
  // The handler context's signal fires when the caller goes away, at the deadline, and (through the
  // adapter's shutdownSignal) when the app shuts down.
  const callContext = (ctx: HandlerContext): CallContext => ({
    principal: authenticator.authenticate((name) => ctx.requestHeader.get(name) ?? undefined),
    signal: ctx.signal,
  });

  function unary<I, O>(rpc: string, fn: (req: I, ctx: CallContext) => Promise<O> | O) {
    return async (req: I, ctx: HandlerContext): Promise<O> => {
      try {
        return await fn(req, callContext(ctx));
      } catch (err) {
        throw toConnectError(err, logger, rpc);
      }
    };
  }

  function stream<I, O>(rpc: string, fn: (req: I, ctx: CallContext) => AsyncIterable<O>) {
    return async function* (req: I, ctx: HandlerContext): AsyncGenerator<O> {
      try {
        yield* fn(req, callContext(ctx));
      } catch (err) {
        throw toConnectError(err, logger, rpc);
      }
    };
  }

  async function* encoded(events: AsyncIterable<StreamEvent>) {
    for await (const event of events) yield encodeStreamEvent(event);
  }

  return {
    sendMessage: unary("SendMessage", async (req, ctx) => encodeSendResponse(await service.sendMessage(decodeSendRequest(req), ctx))),
    sendStreamingMessage: stream("SendStreamingMessage", (req, ctx) => encoded(service.streamMessage(decodeSendRequest(req), ctx))),
    getTask: unary("GetTask", async (req, ctx) => {
      const { id, history } = decodeGetTaskRequest(req);
      return encodeTask(await service.getTask(id, history, ctx));
    }),
    cancelTask: unary("CancelTask", async (req, ctx) => encodeTask(await service.cancelTask(parseTaskName(req.name), ctx))),
    taskSubscription: stream("TaskSubscription", (req, ctx) => encoded(service.subscribe(parseTaskName(req.name), ctx))),
    createTaskPushNotificationConfig: unary("CreateTaskPushNotificationConfig", async (req, ctx) => {
      const { taskId, config } = decodeCreatePushConfigRequest(req);
      return encodeTaskPushConfig(await service.setPushConfig(taskId, config, ctx, "config.pushNotificationConfig"));
    }),
    getTaskPushNotificationConfig: unary("GetTaskPushNotificationConfig", async (req, ctx) => {
      const { taskId, configId } = parsePushConfigName(req.name);
      return encodeTaskPushConfig(await service.getPushConfig(taskId, configId, ctx));
    }),
    listTaskPushNotificationConfig: unary("ListTaskPushNotificationConfig", async (req, ctx) => encodeListPushConfigs(await service.listPushConfigs(parseTaskName(req.parent, "parent"), ctx))),
    deleteTaskPushNotificationConfig: unary("DeleteTaskPushNotificationConfig", async (req, ctx) => {
      const { taskId, configId } = parsePushConfigName(req.name);
      await service.deletePushConfig(taskId, configId, ctx);
      return create(EmptySchema);
    }),
    getAgentCard: unary("GetAgentCard", () => encodeAgentCard(service.agentCard)),
  };
}
