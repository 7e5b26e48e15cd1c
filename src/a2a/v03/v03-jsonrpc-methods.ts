import type { StreamEvent } from "../../domain/a2a-types.js";
import { mapStream } from "../../domain/live-stream.js";
import { oncePerObject } from "../../domain/once-per-object.js";
import type { JsonRpcMethod } from "../version-module.js";
import {
  decodePushConfigQuery,
  decodeSendParams,
  decodeSetPushConfigParams,
  decodeTaskQuery,
  encodeStreamEvent,
  encodeTask,
  encodeTaskPushConfig,
} from "./v03-json-codec.js";
import type { V03Operations } from "./v03-operations.js";

/** The streams of one task share their update objects (task-service `updatesOf`): each is encoded once. */
const encodeOnce = oncePerObject((event: StreamEvent): unknown => encodeStreamEvent(event));

/** Live streams stay live: each event is encoded synchronously as its commit reaches the stream. */
function encodeStream(events: AsyncIterable<StreamEvent>): AsyncIterable<unknown> {
  return mapStream(events, encodeOnce);
}

/** A2A 0.3 JSON-RPC methods (slash names): the 0.3 JSON codec around the 0.3 operations. */
export function v03JsonRpcMethods(ops: V03Operations): Record<string, JsonRpcMethod> {
  return {
    "message/send": async (params, ctx) => ({
      kind: "unary",
      result: encodeStreamEvent(await ops.sendMessage(decodeSendParams(params), ctx)),
    }),
    "message/stream": (params, ctx) => ({
      kind: "stream",
      events: encodeStream(ops.sendStreamingMessage(decodeSendParams(params), ctx)),
    }),
    "tasks/get": async (params, ctx) => ({
      kind: "unary",
      result: encodeTask(await ops.getTask(decodeTaskQuery(params, true), ctx)),
    }),
    "tasks/cancel": async (params, ctx) => ({
      kind: "unary",
      result: encodeTask(await ops.cancelTask(decodeTaskQuery(params, false).id, ctx)),
    }),
    "tasks/resubscribe": (params, ctx) => ({
      kind: "stream",
      events: encodeStream(ops.resubscribe(decodeTaskQuery(params, false).id, ctx)),
    }),
    "tasks/pushNotificationConfig/set": async (params, ctx) => ({
      kind: "unary",
      result: encodeTaskPushConfig(
        await ops.setPushConfig({ ...decodeSetPushConfigParams(params), path: "params.pushNotificationConfig" }, ctx),
      ),
    }),
    "tasks/pushNotificationConfig/get": async (params, ctx) => ({
      kind: "unary",
      result: encodeTaskPushConfig(await ops.getPushConfig(decodePushConfigQuery(params, "optional"), ctx)),
    }),
    "tasks/pushNotificationConfig/list": async (params, ctx) => ({
      kind: "unary",
      result: (await ops.listPushConfigs(decodePushConfigQuery(params, "none").taskId, ctx)).map(encodeTaskPushConfig),
    }),
    "tasks/pushNotificationConfig/delete": async (params, ctx) => {
      const { taskId, configId } = decodePushConfigQuery(params, "required");
      await ops.deletePushConfig({ taskId, configId: configId! }, ctx);
      return { kind: "unary", result: null };
    },
    "agent/getAuthenticatedExtendedCard": async () => ({
      kind: "unary",
      result: await ops.getAuthenticatedExtendedCard(),
    }),
  };
}
