import type { CallContext } from "../../auth/call-context.js";
import type { PushNotificationConfig, StreamEvent, Task, TaskPushNotificationConfig } from "../../domain/a2a-types.js";
import { DomainError } from "../../domain/errors.js";
import type { AgentCard } from "../agent-card.js";
import type { SendParams, SendResult, TaskService } from "../task-service.js";
import type { HistoryLimit } from "../task-view.js";

export interface V03OperationsOptions {
  service: TaskService;
}

/**
 * The A2A 0.3 operations on decoded (version-neutral) requests, shared by every 0.3 binding: JSON-RPC (its
 * own JSON codec), HTTP+JSON and gRPC/Connect/gRPC-Web (the `a2a.v1` proto codec) decode into these calls
 * and encode their results. The 0.3 semantics live here: resubscribing to a terminal task answers its
 * Task and closes, there is no ListTasks, and no extended card is configured.
 */
export function v03Operations(options: V03OperationsOptions) {
  const { service } = options;
  return {
    sendMessage: (params: SendParams, ctx: CallContext): Promise<SendResult> => service.send(params, ctx),
    sendStreamingMessage: (params: SendParams, ctx: CallContext): AsyncIterable<StreamEvent> =>
      service.streamMessage(params, ctx),
    getTask: (query: { id: string; history: HistoryLimit }, ctx: CallContext): Promise<Task> =>
      service.getTask(query.id, query.history, ctx),
    cancelTask: (id: string, ctx: CallContext): Promise<Task> => service.cancelTask(id, ctx),
    resubscribe: (id: string, ctx: CallContext): AsyncIterable<StreamEvent> => service.subscribe(id, ctx),
    /** `path` names where the config sat in the caller's request, for error messages. */
    setPushConfig: (
      req: { taskId: string; config: PushNotificationConfig; path: string },
      ctx: CallContext,
    ): Promise<TaskPushNotificationConfig> => service.setPushConfig(req.taskId, req.config, ctx, req.path),
    getPushConfig: (
      req: { taskId: string; configId?: string | undefined },
      ctx: CallContext,
    ): Promise<TaskPushNotificationConfig> => service.getPushConfig(req.taskId, req.configId, ctx),
    listPushConfigs: (taskId: string, ctx: CallContext): Promise<TaskPushNotificationConfig[]> =>
      service.listPushConfigs(taskId, ctx),
    deletePushConfig: async (req: { taskId: string; configId: string }, ctx: CallContext): Promise<void> =>
      service.deletePushConfig(req.taskId, req.configId, ctx),
    /** The public card (0.3 `GetAgentCard`, `/v1/card`). */
    agentCard: async (): Promise<AgentCard> => service.agentCard,
    getAuthenticatedExtendedCard: async (): Promise<never> => {
      throw new DomainError(
        "extended-card-not-configured",
        "Authenticated Extended Card is not configured for this agent",
      );
    },
  };
}

export type V03Operations = ReturnType<typeof v03Operations>;
