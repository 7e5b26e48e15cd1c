import { create } from "@bufbuild/protobuf";
import type { PushNotificationConfig, TaskPushNotificationConfig } from "../../domain/a2a-types.js";
import { invalidParams } from "../../domain/errors.js";
import * as pb from "../../gen/a2a/v1/a2a_pb.js";
import { decodePushConfig, encodePushConfig, parsePushConfigName, parseTaskName } from "./v03-proto-codec.js";

/** Push-config messages of `a2a.v1` (gRPC, Connect, and ProtoJSON for HTTP+JSON) ⇄ the domain shapes. */

export function formatPushConfigName(taskId: string, configId: string): string {
  return `tasks/${taskId}/pushNotificationConfigs/${configId}`;
}

/**
 * CreateTaskPushNotificationConfigRequest `{parent, configId, config: {name, pushNotificationConfig}}`.
 * The config id comes from `configId`, else `config.pushNotificationConfig.id`, else `config.name`; when
 * several are given they must agree, and `config.name` must name the parent task.
 */
export function decodeCreatePushConfigRequest(req: pb.CreateTaskPushNotificationConfigRequest): {
  taskId: string;
  config: PushNotificationConfig;
} {
  const taskId = parseTaskName(req.parent, "parent");
  const body = req.config?.pushNotificationConfig;
  if (!body)
    throw invalidParams("config.pushNotificationConfig is required", { path: "config.pushNotificationConfig" });
  const config = decodePushConfig(body, "config.pushNotificationConfig");
  const candidates: Array<[string, string]> = [];
  if (req.configId) candidates.push(["configId", req.configId]);
  if (config.id) candidates.push(["config.pushNotificationConfig.id", config.id]);
  if (req.config?.name) {
    const named = parsePushConfigName(req.config.name, "config.name");
    if (named.taskId !== taskId)
      throw invalidParams(`config.name "${req.config.name}" does not name the parent task (${req.parent})`, {
        path: "config.name",
      });
    candidates.push(["config.name", named.configId]);
  }
  const first = candidates[0];
  const conflict = candidates.find(([, id]) => id !== first?.[1]);
  if (first && conflict)
    throw invalidParams(`${first[0]} "${first[1]}" and ${conflict[0]} "${conflict[1]}" disagree on the config id`, {
      path: conflict[0],
    });
  return { taskId, config: { ...config, ...(first ? { id: first[1] } : {}) } };
}

export function encodeTaskPushConfig(config: TaskPushNotificationConfig): pb.TaskPushNotificationConfig {
  return create(pb.TaskPushNotificationConfigSchema, {
    name: formatPushConfigName(config.taskId, config.pushNotificationConfig.id),
    pushNotificationConfig: encodePushConfig(config.pushNotificationConfig),
  });
}

/** Every config in one page (a task holds at most PUSH_MAX_CONFIGS_PER_TASK), so no next page token. */
export function encodeListPushConfigs(
  configs: TaskPushNotificationConfig[],
): pb.ListTaskPushNotificationConfigResponse {
  return create(pb.ListTaskPushNotificationConfigResponseSchema, {
    configs: configs.map(encodeTaskPushConfig),
    nextPageToken: "",
  });
}
