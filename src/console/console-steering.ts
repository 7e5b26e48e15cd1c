import type { Scope } from "../auth/principal.js";
import type { CallContext } from "../auth/call-context.js";
import { invalidParams } from "../domain/errors.js";
import {
  onlyKnownFields,
  optionalObject,
  optionalString,
  requiredString,
  type JsonObject,
} from "../domain/json-shape.js";
import type { TaskRecord } from "../domain/task-record.js";
import type { TaskSupervisor } from "../engine/task-supervisor.js";
import type { Principal } from "../auth/principal.js";
import { sendJson } from "../transport/http-io.js";
import type { HttpRouter } from "../transport/http-router.js";
import { readJsonObject } from "../transport/rest/openwop-request.js";
import type { ConsoleOperations } from "./console-operations.js";

type Steering = TaskSupervisor["steering"];

/** One console action on a task: `POST /console/api/tasks/{taskId}/<action>`, its scopes and body fields. */
interface ConsoleSteeringAction {
  action: string;
  /** The same scopes as the API's operation (docs/operating.md "Steering a task"). */
  scopes: readonly Scope[];
  fields: readonly string[];
  run(steering: Steering, taskId: string, acting: Principal, body: JsonObject): Promise<TaskRecord>;
}

/** Adding an action is one more row. */
const ACTIONS: readonly ConsoleSteeringAction[] = [
  {
    action: "pause",
    scopes: ["runs:cancel"],
    fields: ["reason", "drainPolicy"],
    run: (steering, taskId, acting, body) => {
      const drainPolicy = optionalString(body, "drainPolicy", "body");
      if (drainPolicy !== undefined && drainPolicy !== "drain-current-node" && drainPolicy !== "immediate")
        throw invalidParams("body.drainPolicy must be drain-current-node or immediate", { path: "body.drainPolicy" });
      const reason = optionalString(body, "reason", "body");
      return steering.pause(taskId, acting, {
        ...(reason !== undefined ? { reason } : {}),
        ...(drainPolicy !== undefined ? { drainPolicy } : {}),
      });
    },
  },
  {
    action: "resume",
    scopes: ["runs:cancel"],
    fields: ["reason"],
    run: (steering, taskId, acting, body) => {
      const reason = optionalString(body, "reason", "body");
      return steering.resume(taskId, acting, reason !== undefined ? { reason } : {});
    },
  },
  {
    action: "retry",
    scopes: ["runs:cancel", "runs:create"],
    fields: [],
    run: (steering, taskId, acting) => steering.retry(taskId, acting),
  },
  {
    action: "restart",
    scopes: ["runs:cancel", "runs:create"],
    fields: ["nodeId", "reason"],
    run: (steering, taskId, acting, body) =>
      steering.restart(taskId, acting, requiredString(body, "nodeId", "body"), optionalString(body, "reason", "body")),
  },
  {
    action: "move",
    scopes: ["runs:cancel", "runs:create"],
    fields: ["toVersion", "nodes", "reason"],
    run: (steering, taskId, acting, body) => {
      const nodes = optionalObject(body, "nodes", "body");
      if (!nodes || !Object.values(nodes).every((v) => typeof v === "string"))
        throw invalidParams("body.nodes must map the task's current node to a node of toVersion", {
          path: "body.nodes",
        });
      const reason = optionalString(body, "reason", "body");
      return steering.move(taskId, acting, {
        toVersion: requiredString(body, "toVersion", "body"),
        nodes: nodes as Record<string, string>,
        ...(reason !== undefined ? { reason } : {}),
      });
    },
  },
];

/** The console's steering actions: 202 with the task's summary as the action left it. */
export function addConsoleSteeringRoutes(
  router: HttpRouter,
  options: { operations: ConsoleOperations; maxBodyBytes: number; maxInputDepth: number },
): void {
  for (const entry of ACTIONS) {
    router.add("POST", `/console/api/tasks/{taskId}/${entry.action}`, async (req, res, { taskId }, ctx) => {
      const body = (await readJsonObject(req, options, { optional: true })) ?? {};
      onlyKnownFields(body, "body", entry.fields);
      sendJson(res, 202, await steer(options.operations, entry, taskId!, body, ctx));
    });
  }
}

function steer(
  operations: ConsoleOperations,
  entry: ConsoleSteeringAction,
  taskId: string,
  body: JsonObject,
  ctx: CallContext,
) {
  return operations.steer(taskId, entry.scopes, ctx, (steering, acting) => entry.run(steering, taskId, acting, body));
}
