import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { CallContext } from "../../auth/call-context.js";
import type { A2AService } from "../../gen/lf/a2a/v1/draft11/a2a_pb.js";
import { callContextOf } from "../connect-caller.js";
import type { V11Operations } from "./v11-operations.js";

function unary<I, O>(op: (req: I, ctx: CallContext) => Promise<O>) {
  return (req: I, ctx: HandlerContext): Promise<O> => op(req, callContextOf(ctx));
}

function stream<I, O>(op: (req: I, ctx: CallContext) => AsyncIterable<O>) {
  return async function* (req: I, ctx: HandlerContext): AsyncGenerator<O> {
    yield* op(req, callContextOf(ctx));
  };
}

/** `lf.a2a.v1.A2AService` as the 1.1 draft reads and writes it (the Connect handler picks it for `a2a-version: 1.1`). */
export function v11ConnectService(ops: V11Operations): ServiceImpl<typeof A2AService> {
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
