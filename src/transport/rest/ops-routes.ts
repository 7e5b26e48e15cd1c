import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readiness } from "../../observability/readiness.js";
import type { Telemetry } from "../../observability/telemetry.js";
import { sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";

/**
 * `Retry-After` of a not-ready answer. Not-ready means the store is out of reach or the instance is draining:
 * states that last seconds at least, and a check costs a store ping (up to READINESS_TIMEOUT_MS), so a
 * caller asking again sooner learns nothing and adds load; longer would keep a recovered instance out of
 * rotation for callers that honour it (probes keep their own period).
 */
export const READINESS_RETRY_AFTER_SECONDS = 5;

/**
 * The operator's HTTP endpoints (no credentials): `/readyz` (200 when the store answers a ping in time and
 * the instance is neither draining nor shedding new tasks, else 503 with the reason; `details` says which store serves and whether it is
 * durable, with the in-memory fallback's warning) and `/metrics` (Prometheus text format).
 * `/healthz` (liveness) lives with the discovery routes.
 */
export function addOpsRoutes(router: HttpRouter, options: { readiness: Readiness; telemetry: Telemetry }): void {
  router.add("GET", "/readyz", async (req, res) => {
    // `?shedding=ready`: shedding is reported (checks.shedding) but answered 200. For probes that take an instance
    // out of all traffic (Kubernetes readiness): shedding must keep serving replies and reads, and if every
    // instance shed at once, no instance would be left to serve them.
    const sheddingIsReady = new URLSearchParams(req.url?.split("?")[1] ?? "").get("shedding") === "ready";
    const report = await options.readiness.check({ sheddingIsReady });
    if (report.ready) sendJson(res, 200, { status: "ready", checks: report.checks, details: report.details });
    else
      sendJson(
        res,
        503,
        { status: "not-ready", reason: report.reason, checks: report.checks, details: report.details },
        { "retry-after": String(READINESS_RETRY_AFTER_SECONDS) },
      );
  });
  router.add("GET", "/metrics", async (req, res) => {
    options.telemetry.serveMetrics(req as IncomingMessage, res as ServerResponse);
  });
}
