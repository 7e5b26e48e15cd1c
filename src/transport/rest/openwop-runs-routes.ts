import { invalidParams } from "../../domain/errors.js";
import type { DrainPolicy } from "../../domain/run-status.js";
import type { RunEventFeed } from "../../runs/run-event-feed.js";
import type { RunInterrupts } from "../../runs/run-interrupts.js";
import type { RunService, StartRunRequest } from "../../runs/run-service.js";
import {
  expectObject,
  onlyKnownFields,
  optionalObject,
  optionalString,
  optionalStringArray,
  requiredString,
  type JsonObject,
} from "../../domain/json-shape.js";
import { sendJson, SseWriter, type HttpRequest, type HttpResponse } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";
import { openwopErrorBody } from "../errors/openwop-error-exit.js";
import type { ReportError } from "../errors/wire-error.js";
import { headerOf, integerParam, queryOf, readJsonObject } from "./openwop-request.js";

export interface OpenwopRunsRoutesOptions {
  runs: RunService;
  feed: RunEventFeed;
  interrupts: RunInterrupts;
  report: ReportError;
  maxBodyBytes: number;
  maxInputDepth: number;
  /** SSE keepalive comment interval (the spec asks for at least one every 30 s). */
  keepaliveMs?: number;
}

const START_RUN_FIELDS = ["workflowId", "inputs", "tenantId", "metadata", "tags", "configurable"] as const;
const MAX_TAGS = 100;
const MAX_TAG_LENGTH = 256;
/** Idempotency-Key: printable ASCII, at most 255 characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e][\x20-\x7e]{0,254}$/;
/** rest-endpoints.md: a response replayed from the Idempotency-Key cache says so. */
const IDEMPOTENT_REPLAY_HEADER = "OpenWOP-Idempotent-Replay";
const POLL_DEFAULT_TIMEOUT_MS = 10_000;
const POLL_MAX_TIMEOUT_MS = 30_000;
const POLL_MAX_LIMIT = 1000;

/**
 * The OpenWOP runs API (rest-endpoints.md): decode → RunService / RunEventFeed / RunInterrupts → encode.
 * Errors are thrown and answered by the app's handler as `{error, message, details?}`.
 */
export function addOpenwopRunsRoutes(router: HttpRouter, options: OpenwopRunsRoutesOptions): void {
  const { runs, feed, interrupts } = options;

  router.add("POST", "/v1/runs", async (req, res, _params, ctx) => {
    const idempotencyKey = idempotencyKeyOf(req);
    const request = decodeStartRun((await readJsonObject(req, options))!);
    const result = await runs.startRun(request, ctx, idempotencyKey);
    sendJson(res, result.status, result.body, {
      location: result.body.statusUrl,
      ...(result.replayed ? { [IDEMPOTENT_REPLAY_HEADER]: "true" } : {}),
    });
  });

  router.add("GET", "/v1/runs/{runId}", async (_req, res, { runId }, ctx) => {
    sendJson(res, 200, await runs.snapshot(runId!, ctx));
  });

  router.add("GET", "/v1/runs/{runId}/events", async (req, res, { runId }, ctx) => {
    const events = await feed.open(runId!, resumePointOf(req), ctx);
    await streamEvents(res, events, options);
  });

  router.add("GET", "/v1/runs/{runId}/events/poll", async (req, res, { runId }, ctx) => {
    const query = queryOf(req);
    const after = integerParam(query.get("after"), "after", -1, -1, Number.MAX_SAFE_INTEGER);
    const timeoutMs = integerParam(
      query.get("timeoutMs"),
      "timeoutMs",
      POLL_DEFAULT_TIMEOUT_MS,
      0,
      POLL_MAX_TIMEOUT_MS,
    );
    const limit = integerParam(query.get("limit"), "limit", 500, 1, POLL_MAX_LIMIT);
    const { events, nextAfter, terminal } = await feed.poll(runId!, after, timeoutMs, limit, ctx);
    sendJson(res, 200, { events, nextAfter, terminal });
  });

  router.add("POST", "/v1/runs/{runId}/cancel", async (req, res, { runId }, ctx) => {
    const body = await readJsonObject(req, options, { optional: true });
    if (body) onlyKnownFields(body, "body", ["reason"]);
    const reason = body ? optionalString(body, "reason", "body") : undefined;
    // 200 with the run as the cancel left it: `cancelling` until the engine has stopped it, then `cancelled`.
    const record = await runs.cancel(runId!, ctx, reason);
    sendJson(res, 200, runs.snapshotOf(record, ctx.principal));
  });

  // runs.md "Pause and resume" (openwop/openwop a98b0205): 202 with the status the action left.
  router.add("POST", "/v1/runs/{runId}:pause", async (req, res, { runId }, ctx) => {
    sendJson(
      res,
      202,
      await runs.pause(runId!, ctx, decodePause(await readJsonObject(req, options, { optional: true }))),
    );
  });

  router.add("POST", "/v1/runs/{runId}:resume", async (req, res, { runId }, ctx) => {
    sendJson(
      res,
      202,
      await runs.resume(runId!, ctx, decodeResume(await readJsonObject(req, options, { optional: true }))),
    );
  });

  router.add("POST", "/v1/runs/{runId}/interrupts/{nodeId}", async (req, res, { runId, nodeId }, ctx) => {
    const resumeValue = resumeValueOf((await readJsonObject(req, options))!);
    const record = await interrupts.resolveAtNode(runId!, nodeId!, resumeValue, ctx);
    sendJson(res, 200, runs.snapshotOf(record, ctx.principal));
  });

  router.add("GET", "/v1/workflows", async (_req, res, _params, ctx) => {
    sendJson(res, 200, { workflows: runs.workflows(ctx) });
  });

  router.add("GET", "/v1/workflows/{workflowId}", async (_req, res, { workflowId }, ctx) => {
    sendJson(res, 200, runs.workflow(workflowId!, ctx));
  });
}

/** `{resumeValue: {...}}`, the body of both interrupt resolution endpoints. */
export function resumeValueOf(body: JsonObject): Record<string, unknown> {
  if (!("resumeValue" in body))
    throw invalidParams(`the body needs "resumeValue", e.g. {"resumeValue": {"action": "accept"}}`, {
      path: "body.resumeValue",
    });
  return expectObject(body["resumeValue"], "body.resumeValue");
}

const DRAIN_POLICIES: readonly DrainPolicy[] = ["drain-current-node", "immediate"];

/** `{reason?}`, the body of resumeRun. */
export function decodeResume(body: JsonObject | undefined): { reason?: string } {
  if (!body) return {};
  onlyKnownFields(body, "body", ["reason"]);
  const reason = optionalString(body, "reason", "body");
  return reason !== undefined ? { reason } : {};
}

/** `{reason?, drainPolicy?}`, the body of pauseRun (binding-neutral: the v2 paths decode it the same way). */
export function decodePause(body: JsonObject | undefined): { reason?: string; drainPolicy?: DrainPolicy } {
  if (!body) return {};
  onlyKnownFields(body, "body", ["reason", "drainPolicy"]);
  const reason = optionalString(body, "reason", "body");
  const drainPolicy = optionalString(body, "drainPolicy", "body");
  if (drainPolicy !== undefined && !(DRAIN_POLICIES as readonly string[]).includes(drainPolicy))
    throw invalidParams(`body.drainPolicy must be one of ${DRAIN_POLICIES.join(", ")}`, { path: "body.drainPolicy" });
  return {
    ...(reason !== undefined ? { reason } : {}),
    ...(drainPolicy !== undefined ? { drainPolicy: drainPolicy as DrainPolicy } : {}),
  };
}

export function decodeStartRun(body: JsonObject): StartRunRequest {
  if ("callbackUrl" in body) {
    throw invalidParams(
      "callbackUrl is not supported by this host; follow the run with GET /v1/runs/{runId}/events (SSE) or /events/poll",
      { path: "body.callbackUrl" },
    );
  }
  onlyKnownFields(body, "body", START_RUN_FIELDS);
  const tags = optionalStringArray(body, "tags", "body");
  if (tags && (tags.length > MAX_TAGS || tags.some((t) => t.length > MAX_TAG_LENGTH))) {
    throw invalidParams(`body.tags may hold at most ${MAX_TAGS} tags of at most ${MAX_TAG_LENGTH} characters`, {
      path: "body.tags",
    });
  }
  const inputs = optionalObject(body, "inputs", "body");
  const tenantId = optionalString(body, "tenantId", "body");
  const metadata = optionalObject(body, "metadata", "body");
  const configurable = optionalObject(body, "configurable", "body");
  return {
    workflowId: requiredString(body, "workflowId", "body"),
    ...(inputs ? { inputs } : {}),
    ...(tenantId !== undefined ? { tenantId } : {}),
    ...(metadata ? { metadata } : {}),
    ...(tags ? { tags } : {}),
    ...(configurable ? { configurable } : {}),
  };
}

export function idempotencyKeyOf(req: HttpRequest): string | undefined {
  const key = headerOf(req, "idempotency-key");
  if (key === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(key)) {
    throw invalidParams("Idempotency-Key must be 1-255 printable ASCII characters", { path: "header.Idempotency-Key" });
  }
  return key;
}

/** `Last-Event-ID` (a reconnecting EventSource) wins over `?after=`; both mean "the last sequence I have". */
export function resumePointOf(req: HttpRequest): number {
  const lastEventId = headerOf(req, "last-event-id");
  if (lastEventId !== undefined && lastEventId !== "")
    return integerParam(lastEventId, "Last-Event-ID", -1, 0, Number.MAX_SAFE_INTEGER);
  return integerParam(queryOf(req).get("after"), "after", -1, -1, Number.MAX_SAFE_INTEGER);
}

/** A run's events as SSE (event name = event type, id = sequence), an `error` event if the stream fails. */
export async function streamEvents(
  res: HttpResponse,
  events: AsyncGenerator<{ sequence: number; type: string }>,
  options: Pick<OpenwopRunsRoutesOptions, "report" | "keepaliveMs">,
): Promise<void> {
  const sse = new SseWriter(res, options.keepaliveMs);
  try {
    for await (const event of events) {
      if (sse.isClosed) break;
      await sse.send(event, { id: event.sequence, event: event.type });
    }
  } catch (err) {
    await sse.send(openwopErrorBody(options.report(err, { stream: "run events" })).body, { event: "error" });
  } finally {
    sse.end();
  }
}
