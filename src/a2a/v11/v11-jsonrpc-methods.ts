import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import type { CallContext } from "../../auth/call-context.js";
import * as pb from "../../gen/lf/a2a/v1/draft11/a2a_pb.js";
import { mapStream } from "../../domain/live-stream.js";
import { oncePerObject } from "../../domain/once-per-object.js";
import type { JsonRpcMethod } from "../version-module.js";
import { readV10, writeTaskPageV10, writeV10 } from "../v10/v10-json.js";
import type { V11Operations } from "./v11-operations.js";

type Write = (schema: DescMessage, message: MessageShape<DescMessage>) => unknown;

function unary<I extends DescMessage, O extends DescMessage>(input: I, output: O, op: (req: MessageShape<I>, ctx: CallContext) => Promise<MessageShape<O>>, write: Write = writeV10): JsonRpcMethod {
  return async (params, ctx) => ({ kind: "unary", result: write(output, await op(readV10(input, params, "params"), ctx)) });
}

const streamJson = oncePerObject((event: pb.StreamResponse): unknown => writeV10(pb.StreamResponseSchema, event));

function stream<I extends DescMessage>(input: I, op: (req: MessageShape<I>, ctx: CallContext) => AsyncIterable<pb.StreamResponse>): JsonRpcMethod {
  return (params, ctx) => ({ kind: "stream", events: mapStream(op(readV10(input, params, "params"), ctx), streamJson) });
}

/**
 * The 1.1 draft's JSON-RPC methods: 1.0's names (the endpoint picks this table for `A2A-Version: 1.1`), params
 * and results in ProtoJSON of the draft's messages (1.0's ProtoJSON helpers: `generation` is an int64, so a
 * string on the wire, and a number is read too).
 */
export function v11JsonRpcMethods(ops: V11Operations): Record<string, JsonRpcMethod> {
  return {
    SendMessage: unary(pb.SendMessageRequestSchema, pb.SendMessageResponseSchema, ops.sendMessage),
    SendStreamingMessage: stream(pb.SendMessageRequestSchema, ops.sendStreamingMessage),
    GetTask: unary(pb.GetTaskRequestSchema, pb.TaskSchema, ops.getTask),
    ListTasks: unary(pb.ListTasksRequestSchema, pb.ListTasksResponseSchema, ops.listTasks, writeTaskPageV10),
    CancelTask: unary(pb.CancelTaskRequestSchema, pb.TaskSchema, ops.cancelTask),
    SubscribeToTask: stream(pb.SubscribeToTaskRequestSchema, ops.subscribeToTask),
    CreateTaskPushNotificationConfig: unary(pb.TaskPushNotificationConfigSchema, pb.TaskPushNotificationConfigSchema, ops.createTaskPushNotificationConfig),
    GetTaskPushNotificationConfig: unary(pb.GetTaskPushNotificationConfigRequestSchema, pb.TaskPushNotificationConfigSchema, ops.getTaskPushNotificationConfig),
    ListTaskPushNotificationConfigs: unary(pb.ListTaskPushNotificationConfigsRequestSchema, pb.ListTaskPushNotificationConfigsResponseSchema, ops.listTaskPushNotificationConfigs, writeTaskPageV10),
    DeleteTaskPushNotificationConfig: unary(pb.DeleteTaskPushNotificationConfigRequestSchema, EmptySchema, ops.deleteTaskPushNotificationConfig),
    GetExtendedAgentCard: unary(pb.GetExtendedAgentCardRequestSchema, pb.AgentCardSchema, ops.getExtendedAgentCard),
  };
}
