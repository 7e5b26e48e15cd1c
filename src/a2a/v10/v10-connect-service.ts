import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { CallContext } from "../../auth/call-context.js";
import type { A2AService } from "../../gen/lf/a2a/v1/a2a_pb.js";
import { callContextOf } from "../connect-caller.js";
import type { V10Operations } from "./v10-operations.js";

function unary<I, O>(op: (req: I, ctx: CallContext) => Promise<O>) {
  return (req: I, ctx: HandlerContext): Promise<O> => op(req, callContextOf(ctx));
}

function stream<I, O>(op: (req: I, ctx: CallContext) => AsyncIterable<O>) {
  return async function* (req: I, ctx: HandlerContext): AsyncGenerator<O> {
    yield* op(req, callContextOf(ctx));
  };
}

/**
 * `lf.a2a.v1.A2AService` (A2A 1.0) for gRPC, Connect and gRPC-Web: the 1.0 operations as they are (they
 * take and return the `lf.a2a.v1` messages). Version check, authentication and error statuses are the
 * transport's interceptors. A draft that keeps 1.0's service (1.1) registers it under its own descriptor,
 * with its own operations.
 */
export function v10ConnectService(ops: V10Operations): ServiceImpl<typeof A2AService> {
  return {
    sendMessage: unary(ops.sendMessage),
    sendStreamingMessage: stream(ops.sendStreamingMessage),
    getTask: unary(ops.getTask),
    listTasks: unary(ops.listTasks),
    cancelTask: unary(ops.cancelTask),
    subscribeToTask: stream(ops.subscribeToTask),
    createTaskPushNotificationConfig: unary(ops.createTaskPushNotificationConfig),
    getTaskPushNotificationConfig: unary(ops.getTaskPushNotificationConfig),
    listTaskPushNotificationConfigs: unary(ops.listTaskPushNotificationConfigs),
    getExtendedAgentCard: unary(ops.getExtendedAgentCard),
    deleteTaskPushNotificationConfig: unary(ops.deleteTaskPushNotificationConfig),
  };
}
