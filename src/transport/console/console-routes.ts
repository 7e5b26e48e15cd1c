import type { ConsolePush } from "../../a2a/console-push.js";
import { invalidParams } from "../../domain/errors.js";
import { A2A_TASK_STATES, type A2ATaskStateValue } from "../../domain/run-status.js";
import type { ReportError } from "../errors/wire-error.js";
import type { ConsoleOperations, ConsoleTaskFilter } from "../../runs/console-operations.js";
import { sendJson, SseWriter } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";
import { onlyKnownFields, optionalString } from "../../domain/json-shape.js";
import { integerParam, queryOf, readJsonObject } from "../rest/openwop-request.js";
import { streamEvents } from "../rest/openwop-runs-routes.js";
import { addConsoleAssetRoutes } from "./console-assets.js";

export interface ConsoleRoutesOptions {
  operations: ConsoleOperations;
  push: ConsolePush;
  report: ReportError;
  maxBodyBytes: number;
  maxInputDepth: number;
  /** The folder of index.html, console.js and console.css. */
  assetsDir: string;
  keepaliveMs?: number;
}

/**
 * The operator console: its page and assets (no data in them, served without credentials) and its JSON/SSE
 * API under /console/api/ (API key with `console:operate`; errors in the OpenWOP envelope). Interrupts are
 * answered by the page through the signed-token API (POST /v1/interrupts/{token}), nothing console-specific.
 */
export function addConsoleRoutes(router: HttpRouter, options: ConsoleRoutesOptions): void {
  const { operations, push } = options;
  addConsoleAssetRoutes(router, options.assetsDir);

  router.add("GET", "/console/api/machine", async (_req, res, _params, ctx) => {
    sendJson(res, 200, operations.machine(ctx));
  });

  router.add("GET", "/console/api/tasks", async (req, res, _params, ctx) => {
    sendJson(res, 200, { tenants: operations.tenants(ctx), tasks: await operations.list(filterOf(queryOf(req)), ctx) });
  });

  // Every commit of every task, as task summaries: the list updates itself.
  router.add("GET", "/console/api/tasks/stream", async (_req, res, _params, ctx) => {
    const sse = new SseWriter(res, options.keepaliveMs);
    const unsubscribe = operations.watch((summary) => void sse.send(summary), ctx);
    // Sends the headers now: a quiet host would otherwise leave the client waiting for the first commit.
    await sse.send({}, { event: "ready" });
    await new Promise<void>((resolve) => {
      res.on("close", resolve);
      ctx.signal?.addEventListener("abort", () => resolve(), { once: true });
    });
    unsubscribe();
    sse.end();
  });

  router.add("GET", "/console/api/tasks/{taskId}", async (_req, res, { taskId }, ctx) => {
    sendJson(res, 200, await operations.detail(taskId!, ctx), { "cache-control": "no-store" });
  });

  router.add("GET", "/console/api/tasks/{taskId}/events", async (req, res, { taskId }, ctx) => {
    const after = integerParam(queryOf(req).get("after"), "after", -1, -1, Number.MAX_SAFE_INTEGER);
    const events = await operations.events(taskId!, after, ctx);
    await streamEvents(res, events, options);
  });

  router.add("POST", "/console/api/tasks/{taskId}/cancel", async (req, res, { taskId }, ctx) => {
    const body = await readJsonObject(req, options, { optional: true });
    if (body) onlyKnownFields(body, "body", ["reason"]);
    sendJson(res, 202, await operations.cancel(taskId!, body ? optionalString(body, "reason", "body") : undefined, ctx));
  });

  router.add("GET", "/console/api/tasks/{taskId}/push", async (_req, res, { taskId }, ctx) => {
    const tenant = await operations.tenantOf(taskId!, ctx);
    sendJson(res, 200, await push.view(taskId!, tenant, ctx.principal), { "cache-control": "no-store" });
  });

  router.add("POST", "/console/api/tasks/{taskId}/push/{configId}/retry", async (_req, res, { taskId, configId }, ctx) => {
    const tenant = await operations.tenantOf(taskId!, ctx);
    sendJson(res, 202, await push.retryNow(taskId!, configId!, tenant, ctx.principal));
  });
}

function filterOf(query: URLSearchParams): ConsoleTaskFilter {
  const state = query.get("state") || undefined;
  if (state !== undefined && !(A2A_TASK_STATES as readonly string[]).includes(state)) {
    throw invalidParams(`state must be one of ${A2A_TASK_STATES.join(", ")}`, { path: "state" });
  }
  const pick = (name: string) => query.get(name)?.trim() || undefined;
  const tenant = pick("tenant");
  const contextId = pick("contextId");
  const workflowId = pick("skill");
  const idPrefix = pick("q");
  return {
    ...(tenant ? { tenant } : {}),
    ...(state ? { state: state as A2ATaskStateValue } : {}),
    ...(contextId ? { contextId } : {}),
    ...(workflowId ? { workflowId } : {}),
    ...(idPrefix ? { idPrefix } : {}),
  };
}
