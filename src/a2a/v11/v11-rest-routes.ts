import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import type { CallContext } from "../../auth/call-context.js";
import * as pb from "../../gen/lf/a2a/v1/draft11/a2a_pb.js";
import { restRoute, restStreamRoute, type RestRoute } from "../version-module.js";
import { writeTaskPageV10, writeV10 } from "../v10/v10-json.js";
import { decode } from "../v10/v10-rest-routes.js";
import type { V11Operations } from "./v11-operations.js";

type Source = Parameters<typeof decode>[2];

function unary<I extends DescMessage, O extends DescMessage>(
  methods: string,
  path: string,
  name: string,
  source: Source,
  input: I,
  output: O,
  operation: (req: MessageShape<I>, ctx: CallContext) => Promise<MessageShape<O>>,
  write: (schema: O, message: MessageShape<O>) => unknown = writeV10,
): RestRoute {
  return restRoute({ methods, path, name, decode: (req) => decode(req, input, source), operation, encode: (message) => write(output, message) });
}

/**
 * The 1.1 draft's HTTP+JSON binding: 1.0's paths (the dispatcher picks this router for `A2A-Version: 1.1`),
 * read and written with the draft's messages (`?currentGeneration=` on GET /tasks/{id}).
 */
export function v11RestRoutes(ops: V11Operations): RestRoute[] {
  const streamRoute = (methods: string | string[], path: string, name: string, source: (method: string) => Source, input: DescMessage, operation: (req: never, ctx: CallContext) => AsyncIterable<pb.StreamResponse>) =>
    restStreamRoute({ methods, path, name, decode: (req) => decode(req, input, source(req.method)) as never, operation, encode: (event) => writeV10(pb.StreamResponseSchema, event) });
  const routes: RestRoute[] = [
    unary("POST", "/message:send", "message:send", "body", pb.SendMessageRequestSchema, pb.SendMessageResponseSchema, ops.sendMessage),
    streamRoute("POST", "/message:stream", "message:stream", () => "body", pb.SendMessageRequestSchema, ops.sendStreamingMessage),
    unary("POST", "/tasks/{id}:cancel", "tasks:cancel", "optional-body", pb.CancelTaskRequestSchema, pb.TaskSchema, ops.cancelTask),
    streamRoute(["GET", "POST"], "/tasks/{id}:subscribe", "tasks:subscribe", (method) => (method === "POST" ? "optional-body" : "query"), pb.SubscribeToTaskRequestSchema, ops.subscribeToTask),
    unary("POST", "/tasks/{taskId}/pushNotificationConfigs", "pushNotificationConfigs:create", "body", pb.TaskPushNotificationConfigSchema, pb.TaskPushNotificationConfigSchema, ops.createTaskPushNotificationConfig),
    unary("GET", "/tasks/{taskId}/pushNotificationConfigs", "pushNotificationConfigs:list", "query", pb.ListTaskPushNotificationConfigsRequestSchema, pb.ListTaskPushNotificationConfigsResponseSchema, ops.listTaskPushNotificationConfigs, writeTaskPageV10),
    unary("GET", "/tasks/{taskId}/pushNotificationConfigs/{id}", "pushNotificationConfigs:get", "query", pb.GetTaskPushNotificationConfigRequestSchema, pb.TaskPushNotificationConfigSchema, ops.getTaskPushNotificationConfig),
    unary("DELETE", "/tasks/{taskId}/pushNotificationConfigs/{id}", "pushNotificationConfigs:delete", "query", pb.DeleteTaskPushNotificationConfigRequestSchema, EmptySchema, ops.deleteTaskPushNotificationConfig),
    unary("GET", "/tasks/{id}", "tasks:get", "query", pb.GetTaskRequestSchema, pb.TaskSchema, ops.getTask),
    unary("GET", "/tasks", "tasks:list", "query", pb.ListTasksRequestSchema, pb.ListTasksResponseSchema, ops.listTasks, writeTaskPageV10),
    unary("GET", "/extendedAgentCard", "extendedAgentCard", "query", pb.GetExtendedAgentCardRequestSchema, pb.AgentCardSchema, ops.getExtendedAgentCard),
  ];
  return routes.flatMap((route) => [route, { ...route, path: `/{tenant}${route.path}` }]);
}
