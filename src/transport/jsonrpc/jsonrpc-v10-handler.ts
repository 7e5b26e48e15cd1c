import { EmptySchema } from "@bufbuild/protobuf/wkt";
import type { CallContext } from "../../auth/call-context.js";
import { readV10, writeTaskPageV10, writeV10 } from "../../a2a/v10/v10-json.js";
import type { V10Operations } from "../../a2a/v10/v10-operations.js";
import * as pb from "../../gen/lf/a2a/v1/a2a_pb.js";
import type { MethodResult } from "./jsonrpc-v03-handler.js";

type Method = (params: unknown, ctx: CallContext) => Promise<MethodResult> | MethodResult;

async function* streamJson(events: AsyncIterable<pb.StreamResponse>): AsyncGenerator<unknown> {
  for await (const event of events) yield writeV10(pb.StreamResponseSchema, event);
}

/**
 * A2A 1.0 JSON-RPC methods (PascalCase, the gRPC rpc names): params and results are ProtoJSON of the
 * `lf.a2a.v1` messages, read strictly; results use the 1.0 wrappers (`{task}`, stream events
 * `{task|message|statusUpdate|artifactUpdate}`). The endpoint writes 1.0-shaped errors for these methods.
 */
export function v10Methods(ops: V10Operations): Record<string, Method> {
  return {
    SendMessage: async (params, ctx) => ({
      kind: "unary",
      result: writeV10(pb.SendMessageResponseSchema, await ops.sendMessage(readV10(pb.SendMessageRequestSchema, params, "params"), ctx)),
    }),
    SendStreamingMessage: (params, ctx) => ({ kind: "stream", events: streamJson(ops.sendStreamingMessage(readV10(pb.SendMessageRequestSchema, params, "params"), ctx)) }),
    GetTask: async (params, ctx) => ({ kind: "unary", result: writeV10(pb.TaskSchema, await ops.getTask(readV10(pb.GetTaskRequestSchema, params, "params"), ctx)) }),
    ListTasks: async (params, ctx) => ({
      kind: "unary",
      result: writeTaskPageV10(pb.ListTasksResponseSchema, await ops.listTasks(readV10(pb.ListTasksRequestSchema, params, "params"), ctx)),
    }),
    CancelTask: async (params, ctx) => ({ kind: "unary", result: writeV10(pb.TaskSchema, await ops.cancelTask(readV10(pb.CancelTaskRequestSchema, params, "params"), ctx)) }),
    SubscribeToTask: (params, ctx) => ({ kind: "stream", events: streamJson(ops.subscribeToTask(readV10(pb.SubscribeToTaskRequestSchema, params, "params"), ctx)) }),
    CreateTaskPushNotificationConfig: async (params, ctx) => ({
      kind: "unary",
      result: writeV10(pb.TaskPushNotificationConfigSchema, await ops.createTaskPushNotificationConfig(readV10(pb.TaskPushNotificationConfigSchema, params, "params"), ctx)),
    }),
    GetTaskPushNotificationConfig: async (params, ctx) => ({
      kind: "unary",
      result: writeV10(pb.TaskPushNotificationConfigSchema, await ops.getTaskPushNotificationConfig(readV10(pb.GetTaskPushNotificationConfigRequestSchema, params, "params"), ctx)),
    }),
    ListTaskPushNotificationConfigs: async (params, ctx) => ({
      kind: "unary",
      result: writeTaskPageV10(
        pb.ListTaskPushNotificationConfigsResponseSchema,
        await ops.listTaskPushNotificationConfigs(readV10(pb.ListTaskPushNotificationConfigsRequestSchema, params, "params"), ctx),
      ),
    }),
    DeleteTaskPushNotificationConfig: async (params, ctx) => ({
      kind: "unary",
      result: writeV10(EmptySchema, await ops.deleteTaskPushNotificationConfig(readV10(pb.DeleteTaskPushNotificationConfigRequestSchema, params, "params"), ctx)),
    }),
    GetExtendedAgentCard: async (params, ctx) => ({
      kind: "unary",
      result: writeV10(pb.AgentCardSchema, await ops.getExtendedAgentCard(readV10(pb.GetExtendedAgentCardRequestSchema, params, "params"), ctx)),
    }),
  };
}
