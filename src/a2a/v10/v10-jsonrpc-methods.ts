import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import type { CallContext } from "../../auth/call-context.js";
import * as lfA2A from "../../gen/lf/a2a/v1/a2a_pb.js";
import { mapStream } from "../../domain/live-stream.js";
import { oncePerObject } from "../../domain/once-per-object.js";
import type { JsonRpcMethod } from "../version-module.js";
import { readV10, writeTaskPageV10, writeV10, type LfA2ASchemas } from "./v10-json.js";
import type { V10Operations } from "./v10-operations.js";

type Write = (schema: DescMessage, message: MessageShape<DescMessage>) => unknown;

/** A unary method: ProtoJSON params → request message → operation → ProtoJSON result. */
function unary<I extends DescMessage, O extends DescMessage>(
  input: I,
  output: O,
  op: (req: MessageShape<I>, ctx: CallContext) => Promise<MessageShape<O>>,
  write: Write = writeV10,
): JsonRpcMethod {
  return async (params, ctx) => ({
    kind: "unary",
    result: write(output, await op(readV10(input, params, "params"), ctx)),
  });
}

function stream<I extends DescMessage>(
  input: I,
  op: (req: MessageShape<I>, ctx: CallContext) => AsyncIterable<lfA2A.StreamResponse>,
  json: (event: lfA2A.StreamResponse) => unknown,
): JsonRpcMethod {
  return (params, ctx) => ({ kind: "stream", events: mapStream(op(readV10(input, params, "params"), ctx), json) });
}

/**
 * A2A 1.0 JSON-RPC methods (PascalCase, the gRPC rpc names): params and results are ProtoJSON of the
 * `lf.a2a.v1` messages, read strictly; results use the 1.0 wrappers (`{task}`, stream events
 * `{task|message|statusUpdate|artifactUpdate}`). `pb`: a draft that keeps 1.0's names and shapes (1.1) passes
 * its own schemas and operations.
 */
export function v10JsonRpcMethods(ops: V10Operations, pb: LfA2ASchemas = lfA2A): Record<string, JsonRpcMethod> {
  /** Each (shared) stream response as ProtoJSON, written once for every stream of its task. */
  const streamJson = oncePerObject((event: lfA2A.StreamResponse): unknown => writeV10(pb.StreamResponseSchema, event));
  return {
    SendMessage: unary(pb.SendMessageRequestSchema, pb.SendMessageResponseSchema, ops.sendMessage),
    SendStreamingMessage: stream(pb.SendMessageRequestSchema, ops.sendStreamingMessage, streamJson),
    GetTask: unary(pb.GetTaskRequestSchema, pb.TaskSchema, ops.getTask),
    ListTasks: unary(pb.ListTasksRequestSchema, pb.ListTasksResponseSchema, ops.listTasks, writeTaskPageV10),
    CancelTask: unary(pb.CancelTaskRequestSchema, pb.TaskSchema, ops.cancelTask),
    SubscribeToTask: stream(pb.SubscribeToTaskRequestSchema, ops.subscribeToTask, streamJson),
    CreateTaskPushNotificationConfig: unary(
      pb.TaskPushNotificationConfigSchema,
      pb.TaskPushNotificationConfigSchema,
      ops.createTaskPushNotificationConfig,
    ),
    GetTaskPushNotificationConfig: unary(
      pb.GetTaskPushNotificationConfigRequestSchema,
      pb.TaskPushNotificationConfigSchema,
      ops.getTaskPushNotificationConfig,
    ),
    ListTaskPushNotificationConfigs: unary(
      pb.ListTaskPushNotificationConfigsRequestSchema,
      pb.ListTaskPushNotificationConfigsResponseSchema,
      ops.listTaskPushNotificationConfigs,
      writeTaskPageV10,
    ),
    DeleteTaskPushNotificationConfig: unary(
      pb.DeleteTaskPushNotificationConfigRequestSchema,
      EmptySchema,
      ops.deleteTaskPushNotificationConfig,
    ),
    GetExtendedAgentCard: unary(pb.GetExtendedAgentCardRequestSchema, pb.AgentCardSchema, ops.getExtendedAgentCard),
  };
}
