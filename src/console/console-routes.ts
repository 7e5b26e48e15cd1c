import type { ConsolePush } from "./console-push.js";
import { invalidParams } from "../domain/errors.js";
import { A2A_TASK_STATES, type A2ATaskStateValue } from "../domain/run-status.js";
import type { ReportError } from "../transport/errors/wire-error.js";
import { bulkTaskIds, eachTask, type ConsoleOperations, type ConsoleTaskFilter } from "./console-operations.js";
import { requireScope } from "../auth/principal.js";
import { CONSOLE_SCOPE } from "./console-access.js";
import { sendJson, SseWriter } from "../transport/http-io.js";
import type { HttpRouter } from "../transport/http-router.js";
import { onlyKnownFields, optionalString } from "../domain/json-shape.js";
import { integerParam, queryOf, readJsonObject } from "../transport/rest/openwop-request.js";
import { streamEvents } from "../transport/rest/openwop-runs-routes.js";
import { addConsoleAssetRoutes } from "./console-assets.js";
import { addConsoleSteeringRoutes } from "./console-steering.js";

export interface ConsoleRoutesOptions {
  operations: ConsoleOperations;
  push: ConsolePush;
  report: ReportError;
  maxBodyBytes: number;
  maxInputDepth: number;
  keepaliveMs?: number;
}

/**
 * The operator console: its page and assets (no data in them, served without credentials) and its JSON/SSE
 * API under /console/api/ (API key with `console:operate`; errors in the OpenWOP envelope). Tenant-scoped like
 * every other surface: a key sees its own tenant, every configured tenant only with `console:all-tenants`,
 * and another tenant's task answers exactly like an unknown id (ConsoleOperations decides). Interrupts are
 * answered by the page through the signed-token API (POST /v1/interrupts/{token}), nothing console-specific.
 */
export function addConsoleRoutes(router: HttpRouter, options: ConsoleRoutesOptions): void {
  const { operations, push } = options;
  addConsoleAssetRoutes(router);

  router.add("GET", "/console/api/machine", async (_req, res, _params, ctx) => {
    sendJson(res, 200, operations.machine(ctx));
  });

  // One page of tasks: ?limit=&cursor= and the filters; `nextCursor` names the next page.
  router.add("GET", "/console/api/tasks", async (req, res, _params, ctx) => {
    const query = queryOf(req);
    const limit = integerParam(query.get("limit"), "limit", DEFAULT_PAGE, 1, MAX_PAGE);
    const cursor = query.get("cursor") || undefined;
    sendJson(res, 200, await operations.list(filterOf(query), { limit, ...(cursor ? { cursor } : {}) }, ctx), {
      "cache-control": "no-store",
    });
  });

  // ?version=: the graph as that version has it (a task's own); without it, the deployed one.
  router.add("GET", "/console/api/workflows/{skillId}", async (req, res, { skillId }, ctx) => {
    sendJson(res, 200, await operations.workflow(skillId!, ctx, queryOf(req).get("version") || undefined));
  });

  // Bulk actions over selected tasks: one result per task (a task the caller may not see is not-found).
  router.add("POST", "/console/api/bulk/cancel", async (req, res, _params, ctx) => {
    const body = (await readJsonObject(req, options))!;
    onlyKnownFields(body, "body", ["taskIds", "reason"]);
    const reason = optionalString(body, "reason", "body");
    sendJson(res, 200, { results: await operations.cancelMany(bulkTaskIds(body["taskIds"]), reason, ctx) });
  });

  router.add("POST", "/console/api/bulk/retry-push", async (req, res, _params, ctx) => {
    const body = (await readJsonObject(req, options))!;
    onlyKnownFields(body, "body", ["taskIds"]);
    const taskIds = bulkTaskIds(body["taskIds"]);
    requireScope(ctx.principal, CONSOLE_SCOPE);
    requireScope(ctx.principal, "webhooks:manage");
    const results = await eachTask(taskIds, async (taskId) => ({
      retried: await push.retryTask(taskId, await operations.tenantOf(taskId, ctx), ctx),
    }));
    sendJson(res, 200, { results });
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
    sendJson(
      res,
      202,
      await operations.cancel(taskId!, body ? optionalString(body, "reason", "body") : undefined, ctx),
    );
  });

  // Pause, resume, retry, restart from a node (console-steering.ts).
  addConsoleSteeringRoutes(router, options);

  // The pending interrupt answered as the operator: { resumeValue } as on POST /v1/runs/{id}/interrupts/{nodeId}.
  router.add("POST", "/console/api/tasks/{taskId}/interrupts/{nodeId}", async (req, res, { taskId, nodeId }, ctx) => {
    const body = (await readJsonObject(req, options))!;
    onlyKnownFields(body, "body", ["resumeValue"]);
    const resumeValue = body["resumeValue"];
    if (!resumeValue || typeof resumeValue !== "object" || Array.isArray(resumeValue))
      throw invalidParams("resumeValue must be a JSON object", { path: "resumeValue" });
    sendJson(res, 200, await operations.resolve(taskId!, nodeId!, resumeValue as Record<string, unknown>, ctx));
  });

  router.add("GET", "/console/api/tasks/{taskId}/push", async (_req, res, { taskId }, ctx) => {
    const tenant = await operations.tenantOf(taskId!, ctx);
    sendJson(res, 200, await push.view(taskId!, tenant, ctx), { "cache-control": "no-store" });
  });

  router.add(
    "POST",
    "/console/api/tasks/{taskId}/push/{configId}/retry",
    async (_req, res, { taskId, configId }, ctx) => {
      const tenant = await operations.tenantOf(taskId!, ctx);
      sendJson(res, 202, await push.retryNow(taskId!, configId!, tenant, ctx));
    },
  );
}

const DEFAULT_PAGE = 50;
const MAX_PAGE = 500;
const FILTERS = new Set([
  "limit",
  "cursor",
  "state",
  "skill",
  "tenant",
  "contextId",
  "q",
  "createdFrom",
  "createdTo",
  "updatedFrom",
  "updatedTo",
]);

/** An ISO 8601 instant (with a time zone), as the store compares it: toISOString's form. */
function instantParam(query: URLSearchParams, name: string): string | undefined {
  const raw = query.get(name)?.trim();
  if (!raw) return undefined;
  const ms = Date.parse(raw);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(raw) || Number.isNaN(ms)) {
    throw invalidParams(
      `${name} must be an ISO 8601 instant such as 2026-01-31T12:00:00Z (got ${JSON.stringify(raw.slice(0, 40))})`,
      { path: name },
    );
  }
  return new Date(ms).toISOString();
}

function filterOf(query: URLSearchParams): ConsoleTaskFilter {
  for (const name of query.keys()) {
    if (!FILTERS.has(name))
      throw invalidParams(`unknown query parameter "${name.slice(0, 40)}" (known: ${[...FILTERS].join(", ")})`, {
        path: name.slice(0, 40),
      });
  }
  const range = (from: string, to: string) => {
    const [a, b] = [instantParam(query, from), instantParam(query, to)];
    if (a && b && a >= b) throw invalidParams(`${from} must be before ${to}`, { path: from });
    return { ...(a ? { [from]: a } : {}), ...(b ? { [to]: b } : {}) };
  };
  const state = query.get("state") || undefined;
  if (state !== undefined && !(A2A_TASK_STATES as readonly string[]).includes(state)) {
    throw invalidParams(`state must be one of ${A2A_TASK_STATES.join(", ")}`, { path: "state" });
  }
  const pick = (name: string) => {
    const value = query.get(name)?.trim() || undefined;
    if (value && value.length > 200)
      throw invalidParams(`${name} is too long (at most 200 characters)`, { path: name });
    return value;
  };
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
    ...range("createdFrom", "createdTo"),
    ...range("updatedFrom", "updatedTo"),
  };
}
