import { create } from "@bufbuild/protobuf";
import { EmptySchema } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { StreamEvent } from "../../domain/a2a-types.js";
import type { A2AService } from "../../gen/a2a/v1/a2a_pb.js";
import { callContextOf } from "../connect-caller.js";
import { encodeAgentCard } from "./v03-card-codec.js";
import {
  decodeGetTaskRequest,
  decodeSendRequest,
  encodeSendResponse,
  encodeStreamEvent,
  encodeTask,
  parsePushConfigName,
  parseTaskName,
} from "./v03-proto-codec.js";
import { decodeCreatePushConfigRequest, encodeListPushConfigs, encodeTaskPushConfig } from "./v03-proto-push-codec.js";
import type { V03Operations } from "./v03-operations.js";

async function* encoded(events: AsyncIterable<StreamEvent>) {
  for await (const event of events) yield encodeStreamEvent(event);
}

/**
 * `a2a.v1.A2AService` (A2A 0.3) for Connect, gRPC and gRPC-Web: decode → 0.3 operations → encode. The
 * transport's interceptors check the version, authenticate and turn errors into statuses.
 */
export function v03ConnectService(ops: V03Operations): ServiceImpl<typeof A2AService> {
  const call = (ctx: HandlerContext) => callContextOf(ctx);
  return {
    sendMessage: async (req, ctx) => encodeSendResponse(await ops.sendMessage(decodeSendRequest(req), call(ctx))),
    async *sendStreamingMessage(req, ctx) {
      yield* encoded(ops.sendStreamingMessage(decodeSendRequest(req), call(ctx)));
    },
    getTask: async (req, ctx) => encodeTask(await ops.getTask(decodeGetTaskRequest(req), call(ctx))),
    cancelTask: async (req, ctx) => encodeTask(await ops.cancelTask(parseTaskName(req.name), call(ctx))),
    async *taskSubscription(req, ctx) {
      yield* encoded(ops.resubscribe(parseTaskName(req.name), call(ctx)));
    },
    createTaskPushNotificationConfig: async (req, ctx) =>
      encodeTaskPushConfig(
        await ops.setPushConfig(
          { ...decodeCreatePushConfigRequest(req), path: "config.pushNotificationConfig" },
          call(ctx),
        ),
      ),
    getTaskPushNotificationConfig: async (req, ctx) =>
      encodeTaskPushConfig(await ops.getPushConfig(parsePushConfigName(req.name), call(ctx))),
    listTaskPushNotificationConfig: async (req, ctx) =>
      encodeListPushConfigs(await ops.listPushConfigs(parseTaskName(req.parent, "parent"), call(ctx))),
    deleteTaskPushNotificationConfig: async (req, ctx) => {
      await ops.deletePushConfig(parsePushConfigName(req.name), call(ctx));
      return create(EmptySchema);
    },
    getAgentCard: async () => encodeAgentCard(await ops.agentCard()),
  };
}
