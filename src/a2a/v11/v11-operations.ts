import type { StreamEvent } from "../../domain/a2a-types.js";
import type * as pb from "../../gen/lf/a2a/v1/draft11/a2a_pb.js";
import { mapStream } from "../../domain/live-stream.js";
import { oncePerObject } from "../../domain/once-per-object.js";
import type { CallContext } from "../../auth/call-context.js";
import type { SendParams } from "../task-service.js";
import { checkTenant, decodeHistoryLength, decodeListTasksRequest, decodeTaskId } from "../v10/v10-proto-codec.js";
import { v10Operations, type V10OperationsOptions } from "../v10/v10-operations.js";
import {
  decodeGeneration,
  encodeSendResponseV11,
  encodeStreamEventV11,
  encodeTaskPageV11,
  encodeTaskV11,
} from "./v11-proto-codec.js";

/** Each shared stream update as the 1.1 draft, encoded once for every stream of its task. */
const encodeOnce = oncePerObject(encodeStreamEventV11);

/**
 * The A2A 1.1 draft operations: the 1.0 operations (`v10-operations.ts`, by composition), except where the
 * draft differs: every Task and update carries `generation`, GetTask long-polls on `currentGeneration`, and
 * SendMessage to an existing task honours `configuration.ifGenerationMatch` (TaskGenerationMismatchError).
 * Push configs and the extended card are 1.0's as they are (their messages did not change).
 */
export function v11Operations(options: V10OperationsOptions) {
  const { service } = options;
  const v10 = v10Operations(options);

  /** 1.0's checks (tenant, returnImmediately), then the draft's `ifGenerationMatch`. */
  function sendParams(req: pb.SendMessageRequest, ctx: CallContext): SendParams {
    const params = v10.sendParams(req, ctx);
    const ifGenerationMatch = decodeGeneration(req.configuration?.ifGenerationMatch, "configuration.ifGenerationMatch");
    return ifGenerationMatch === undefined ? params : { ...params, ifGenerationMatch };
  }

  function encoded(events: AsyncIterable<StreamEvent>): AsyncIterable<pb.StreamResponse> {
    return mapStream(events, (event) => {
      try {
        return encodeOnce(event);
      } catch (err) {
        options.logger.error(
          { err, event: event.kind },
          "a stream event could not be encoded for the A2A 1.1 draft; it is skipped",
        );
        return undefined;
      }
    });
  }

  return {
    ...v10,
    async sendMessage(req: pb.SendMessageRequest, ctx: CallContext): Promise<pb.SendMessageResponse> {
      return encodeSendResponseV11(await service.send(sendParams(req, ctx), ctx));
    },

    sendStreamingMessage(req: pb.SendMessageRequest, ctx: CallContext): AsyncIterable<pb.StreamResponse> {
      return encoded(service.streamMessage(sendParams(req, ctx), ctx));
    },

    /** With `currentGeneration`: a long-poll (TaskService.getTask). */
    async getTask(req: pb.GetTaskRequest, ctx: CallContext): Promise<pb.Task> {
      const id = decodeTaskId(req.id);
      checkTenant(req.tenant, ctx.principal, id);
      const history = decodeHistoryLength(req.historyLength, "historyLength");
      const afterGeneration = decodeGeneration(req.currentGeneration, "currentGeneration");
      return encodeTaskV11(
        await service.getTask(id, history, ctx, afterGeneration === undefined ? {} : { afterGeneration }),
      );
    },

    async listTasks(req: pb.ListTasksRequest, ctx: CallContext): Promise<pb.ListTasksResponse> {
      checkTenant(req.tenant, ctx.principal);
      return encodeTaskPageV11(await service.listTasks(decodeListTasksRequest(req), ctx), (task, err) =>
        options.logger.error(
          { err, taskId: task.id },
          "a task could not be encoded for A2A 1.1 ListTasks; it is left out of the page",
        ),
      );
    },

    async cancelTask(req: pb.CancelTaskRequest, ctx: CallContext): Promise<pb.Task> {
      const id = decodeTaskId(req.id);
      checkTenant(req.tenant, ctx.principal, id);
      return encodeTaskV11(await service.cancelTask(id, ctx));
    },

    subscribeToTask(req: pb.SubscribeToTaskRequest, ctx: CallContext): AsyncIterable<pb.StreamResponse> {
      const id = decodeTaskId(req.id);
      checkTenant(req.tenant, ctx.principal, id);
      return encoded(service.subscribe(id, ctx, { terminal: "refuse" }));
    },
  };
}

export type V11Operations = ReturnType<typeof v11Operations>;
