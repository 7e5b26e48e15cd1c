import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { CallContext } from "../../auth/call-context.js";
import type { V10Operations } from "../../a2a/v10/v10-operations.js";
import type { Authenticator } from "../../auth/api-key-authenticator.js";
import type { A2AService } from "../../gen/lf/a2a/v1/a2a_pb.js";
import type { Logger } from "../../observability/logger.js";
import { connectErrorV10 } from "../a2a-v10-errors.js";

export interface V10ConnectServiceOptions {
  operations: V10Operations;
  /** The same API keys as every other binding. */
  authenticator: Authenticator;
  logger: Logger;
}

/**
 * `lf.a2a.v1.A2AService` (A2A 1.0) for gRPC, Connect and gRPC-Web: authenticate, then the shared 1.0
 * operations. Every error leaves with its status from the one table and a google.rpc.ErrorInfo detail.
 * The `a2a-version` metadata is checked by the adapter's interceptor before any of this runs.
 */
export function createV10ConnectService(options: V10ConnectServiceOptions): ServiceImpl<typeof A2AService> {
  const { operations: ops, authenticator, logger } = options;
  const callContext = (ctx: HandlerContext): CallContext => ({
    principal: authenticator.authenticate((name) => ctx.requestHeader.get(name) ?? undefined),
    signal: ctx.signal,
  });

  function unary<I, O>(rpc: string, fn: (req: I, ctx: CallContext) => Promise<O>) {
    return async (req: I, ctx: HandlerContext): Promise<O> => {
      try {
        return await fn(req, callContext(ctx));
      } catch (err) {
        throw connectErrorV10(err, logger, rpc);
      }
    };
  }

  function stream<I, O>(rpc: string, fn: (req: I, ctx: CallContext) => AsyncIterable<O>) {
    return async function* (req: I, ctx: HandlerContext): AsyncGenerator<O> {
      try {
        yield* fn(req, callContext(ctx));
      } catch (err) {
        throw connectErrorV10(err, logger, rpc);
      }
    };
  }

  return {
    sendMessage: unary("SendMessage", ops.sendMessage),
    sendStreamingMessage: stream("SendStreamingMessage", ops.sendStreamingMessage),
    getTask: unary("GetTask", ops.getTask),
    listTasks: unary("ListTasks", ops.listTasks),
    cancelTask: unary("CancelTask", ops.cancelTask),
    subscribeToTask: stream("SubscribeToTask", ops.subscribeToTask),
    createTaskPushNotificationConfig: unary("CreateTaskPushNotificationConfig", ops.createTaskPushNotificationConfig),
    getTaskPushNotificationConfig: unary("GetTaskPushNotificationConfig", ops.getTaskPushNotificationConfig),
    listTaskPushNotificationConfigs: unary("ListTaskPushNotificationConfigs", ops.listTaskPushNotificationConfigs),
    getExtendedAgentCard: unary("GetExtendedAgentCard", ops.getExtendedAgentCard),
    deleteTaskPushNotificationConfig: unary("DeleteTaskPushNotificationConfig", ops.deleteTaskPushNotificationConfig),
  };
}
