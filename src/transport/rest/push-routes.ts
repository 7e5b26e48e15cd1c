import type { TaskService } from "../../a2a/task-service.js";
import { invalidParams } from "../../domain/errors.js";
import { sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";

export interface PushRoutesOptions {
  service: TaskService;
}

const MAX_LIMIT = 500;

/**
 * Operator view of push delivery: `GET /v1/push/dead-letters[?taskId=&limit=]` lists the pushes given up
 * on (newest first, the caller's tenant only, scope webhooks:manage). Errors use the OpenWOP envelope.
 */
export function addPushRoutes(router: HttpRouter, options: PushRoutesOptions): void {
  router.add("GET", "/v1/push/dead-letters", async (req, res, _params, ctx) => {
    const query = new URL(req.url ?? "/", "http://host").searchParams;
    const taskId = query.get("taskId") ?? undefined;
    const rawLimit = query.get("limit");
    if (rawLimit !== null && !/^\d{1,4}$/.test(rawLimit))
      throw invalidParams(`limit must be an integer from 1 to ${MAX_LIMIT}`, { path: "limit" });
    const limit = rawLimit === null ? 100 : Math.min(Math.max(Number(rawLimit), 1), MAX_LIMIT);
    const deadLetters = await options.service.pushDeadLetters({ ...(taskId ? { taskId } : {}), limit }, ctx);
    sendJson(res, 200, { deadLetters });
  });
}
