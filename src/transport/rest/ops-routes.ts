import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readiness } from "../../observability/readiness.js";
import type { Telemetry } from "../../observability/telemetry.js";
import { sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";

/**
 * The operator's HTTP endpoints (no credentials): `/readyz` (200 when the store answers a ping in time and
 * the instance is not draining, else 503 with the reason; `details` says which store serves and whether it is
 * durable, with the in-memory fallback's warning) and `/metrics` (Prometheus text format).
 * `/healthz` (liveness) lives with the discovery routes.
 */
export function addOpsRoutes(router: HttpRouter, options: { readiness: Readiness; telemetry: Telemetry }): void {
  router.add("GET", "/readyz", async (_req, res) => {
    const report = await options.readiness.check();
    if (report.ready) sendJson(res, 200, { status: "ready", checks: report.checks, details: report.details });
    else sendJson(res, 503, { status: "not-ready", reason: report.reason, checks: report.checks, details: report.details });
  });
  router.add("GET", "/metrics", async (req, res) => {
    options.telemetry.serveMetrics(req as IncomingMessage, res as ServerResponse);
  });
}
