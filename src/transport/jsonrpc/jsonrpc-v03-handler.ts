import type { TaskService } from "../../a2a/task-service.js";
import type { CallContext } from "../../auth/call-context.js";
import type { StreamEvent } from "../../domain/a2a-types.js";
import { DomainError } from "../../domain/errors.js";
import {
  decodePushConfigQuery,
  decodeSendParams,
  decodeSetPushConfigParams,
  decodeTaskQuery,
  encodeStreamEvent,
  encodeTask,
  encodeTaskPushConfig,
} from "../../a2a/v03/v03-json-codec.js";
import type { JsonRpcId } from "./jsonrpc-errors.js";

/**
 * A2A v0.3 JSON-RPC methods: decode params, call the service, encode the result. Streaming methods return
 * an async iterable of results, which the endpoint writes as SSE.
 */
export type MethodResult = { kind: "unary"; result: unknown } | { kind: "stream"; events: AsyncIterable<unknown> };

type Method = (params: unknown, ctx: CallContext) => Promise<MethodResult> | MethodResult;

async function* encodeStream(events: AsyncIterable<StreamEvent>): AsyncGenerator<unknown> {
  for await (const event of events) yield encodeStreamEvent(event);
}

export function v03Methods(service: TaskService): Record<string, Method> {
  return {
    "message/send": async (params, ctx) => ({ kind: "unary", result: encodeTask(await service.sendMessage(decodeSendParams(params), ctx)) }),
    "message/stream": (params, ctx) => ({ kind: "stream", events: encodeStream(service.streamMessage(decodeSendParams(params), ctx)) }),
    "tasks/get": async (params, ctx) => {
      const { id, history } = decodeTaskQuery(params, true);
      return { kind: "unary", result: encodeTask(await service.getTask(id, history, ctx)) };
    },
    "tasks/cancel": async (params, ctx) => ({ kind: "unary", result: encodeTask(await service.cancelTask(decodeTaskQuery(params, false).id, ctx)) }),
    "tasks/resubscribe": (params, ctx) => ({ kind: "stream", events: encodeStream(service.subscribe(decodeTaskQuery(params, false).id, ctx)) }),
    "tasks/pushNotificationConfig/set": async (params, ctx) => {
      const { taskId, config } = decodeSetPushConfigParams(params);
      return { kind: "unary", result: encodeTaskPushConfig(await service.setPushConfig(taskId, config, ctx, "params.pushNotificationConfig")) };
    },
    "tasks/pushNotificationConfig/get": async (params, ctx) => {
      const { taskId, configId } = decodePushConfigQuery(params, "optional");
      return { kind: "unary", result: encodeTaskPushConfig(await service.getPushConfig(taskId, configId, ctx)) };
    },
    "tasks/pushNotificationConfig/list": async (params, ctx) => {
      const { taskId } = decodePushConfigQuery(params, "none");
      return { kind: "unary", result: (await service.listPushConfigs(taskId, ctx)).map(encodeTaskPushConfig) };
    },
    "tasks/pushNotificationConfig/delete": async (params, ctx) => {
      const { taskId, configId } = decodePushConfigQuery(params, "required");
      await service.deletePushConfig(taskId, configId!, ctx);
      return { kind: "unary", result: null };
    },
    "agent/getAuthenticatedExtendedCard": () => {
      throw new DomainError("extended-card-not-configured", "Authenticated Extended Card is not configured for this agent");
    },
  };
}

export type { JsonRpcId };
