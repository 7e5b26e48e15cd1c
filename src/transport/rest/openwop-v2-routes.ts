import { bareIdFor, boundIdOf, checkMintableTenant } from "../../domain/bound-id.js";
import { DomainError } from "../../domain/errors.js";
import { onlyKnownFields, optionalString, type JsonObject } from "../../domain/json-shape.js";
import type { RunEvent, TaskRecord } from "../../domain/task-record.js";
import type { CallContext } from "../../auth/call-context.js";
import { isTerminalRunStatus } from "../../domain/run-status.js";
import type { PollResult, RunEventFeed } from "../../runs/run-event-feed.js";
import type { RunInterrupts } from "../../runs/run-interrupts.js";
import type { RunService, SteerRunResponse } from "../../runs/run-service.js";
import { runEventV2, type V2EventView } from "../../runs/run-v2-events.js";
import { createdRunV2, runSnapshotV2, withBoundIds } from "../../runs/run-v2-view.js";
import { sendJson, SseWriter, type HttpRequest } from "../http-io.js";
import type { HttpRouter, RouteHandler } from "../http-router.js";
import { openwopV2ErrorBody } from "../errors/openwop-v2-error-exit.js";
import type { ReportError } from "../errors/wire-error.js";
import { requireMajor2, type OpenwopVersions } from "../openwop-version.js";
import {
  decodePause,
  decodeResume,
  decodeStartRun,
  idempotencyKeyOf,
  resumePointOf,
  resumeValueOf,
} from "./openwop-runs-routes.js";
import { integerParam, queryOf, readJsonObject } from "./openwop-request.js";

export interface OpenwopV2RoutesOptions {
  runs: RunService;
  feed: RunEventFeed;
  interrupts: RunInterrupts;
  versions: OpenwopVersions;
  report: ReportError;
  maxBodyBytes: number;
  maxInputDepth: number;
  keepaliveMs?: number;
}

/** events.md §Poll: `timeout` in seconds, 1..60, default 30; a page is at most this many events. */
const POLL_DEFAULT_TIMEOUT_S = 30;
const POLL_MAX_TIMEOUT_S = 60;
const POLL_PAGE = 500;
const POLL_MAX_PAGES = 20;
/** events.md: the stream modes this host serves (the v2 default; `values`, `messages` and `debug` are not). */
const STREAM_MODES = ["updates"];

/**
 * The OpenWOP v2 REST surface: the unversioned twin of every /v1 operation this host serves (path-manifest.json),
 * one line per operation, each calling the same service as its /v1 twin and answering in the v2 shapes (bound
 * ids, the v2 snapshot, event envelopes and error table). Only a request served under major 2 reaches a handler.
 */
export function addOpenwopV2Routes(router: HttpRouter, options: OpenwopV2RoutesOptions): void {
  const { runs, feed, interrupts, versions } = options;
  const v2 = (method: string, template: string, handler: RouteHandler): void => {
    router.add(method, template, async (req, res, params, ctx) => {
      requireMajor2(req, template, versions);
      await handler(req, res, params, ctx);
    });
  };
  /** The stored id a `{runId}` names, checked against the caller's tenant before anything is read. */
  const runIdOf = (params: Record<string, string>, ctx: CallContext): string =>
    bareIdFor(params["runId"]!, ctx.principal.tenant, versions.v1);

  v2("POST", "/runs", async (req, res, _params, ctx) => {
    const idempotencyKey = idempotencyKeyOf(req);
    const request = decodeStartRun((await readJsonObject(req, options))!);
    // Before anything is written: a tenant that cannot form a bound id gets no run it could not name.
    checkMintableTenant(ctx.principal.tenant);
    const result = await runs.startRun(request, ctx, idempotencyKey);
    const body = createdRunV2(ctx.principal.tenant, result.body);
    sendJson(res, result.status, body, {
      location: body.statusUrl,
      ...(result.replayed ? { "OpenWOP-Idempotent-Replay": "true" } : {}),
    });
  });

  v2("GET", "/runs/{runId}", async (_req, res, params, ctx) => {
    const { record, snapshot } = await runs.read(runIdOf(params, ctx), ctx);
    sendJson(res, 200, runSnapshotV2(snapshot, record));
  });

  /**
   * What the v2 events of a run are projected with: its owner block (run.started echoes it) and its node kinds
   * (node.started names each node's type). The read also answers 404 before any stream starts.
   */
  const eventViewOf = async (runId: string, ctx: CallContext): Promise<V2EventView> => {
    const { record, snapshot } = await runs.read(runId, ctx);
    const kinds = runs.nodeKinds(snapshot.workflowId);
    return {
      tenant: ctx.principal.tenant,
      owner: runSnapshotV2(snapshot, record)["owner"],
      kindOf: (nodeId) => kinds.get(nodeId),
    };
  };

  v2("GET", "/runs/{runId}/events", async (req, res, params, ctx) => {
    const runId = runIdOf(params, ctx);
    streamModeOf(req);
    const view = await eventViewOf(runId, ctx);
    const events = await feed.openStored(runId, resumePointOf(req), ctx);
    const sse = new SseWriter(res, options.keepaliveMs);
    try {
      for await (const event of events) {
        if (sse.isClosed) break;
        const doc = runEventV2(event, view);
        if (doc) await sse.send(doc, { id: event.sequence, event: String(doc["type"]) });
      }
    } catch (err) {
      await sse.send(openwopV2ErrorBody(options.report(err, { stream: "run events" })).body, { event: "error" });
    } finally {
      sse.end();
    }
  });

  v2("GET", "/runs/{runId}/events/poll", async (req, res, params, ctx) => {
    const runId = runIdOf(params, ctx);
    const query = queryOf(req);
    const after = integerParam(query.get("afterSequence"), "afterSequence", -1, 0, Number.MAX_SAFE_INTEGER);
    const timeoutS = integerParam(query.get("timeout"), "timeout", POLL_DEFAULT_TIMEOUT_S, 1, POLL_MAX_TIMEOUT_S);
    const tenant = ctx.principal.tenant;
    const view = await eventViewOf(runId, ctx);
    const v2Events = (page: PollResult<RunEvent>): Array<Record<string, unknown>> =>
      page.events.flatMap((e) => {
        const doc = runEventV2(e, view);
        return doc ? [doc] : [];
      });
    let polled = await feed.pollStored(runId, after, timeoutS * 1000, POLL_PAGE, ctx);
    let events = v2Events(polled);
    // A page holding only the host's own event types (none on v2) would leave the caller's cursor where it was:
    // read on, without waiting again.
    for (let pages = 1; events.length === 0 && polled.events.length > 0 && pages < POLL_MAX_PAGES; pages++) {
      polled = await feed.pollStored(runId, polled.nextAfter, 0, POLL_PAGE, ctx);
      events = v2Events(polled);
    }
    sendJson(res, 200, {
      runId: boundIdOf(tenant, runId),
      events,
      lastSequence: polled.run.lastSequence,
      status: polled.run.status,
      isTerminal: isTerminalRunStatus(polled.run.status),
    });
  });

  /** A run action answered `{runId, status}` as the action left the run, with its optional JSON body handed over undecoded. */
  const runAction = (
    template: string,
    status: number,
    act: (runId: string, body: JsonObject | undefined, ctx: CallContext) => Promise<TaskRecord>,
  ): void =>
    v2("POST", template, async (req, res, params, ctx) => {
      const runId = runIdOf(params, ctx);
      const record = await act(runId, await readJsonObject(req, options, { optional: true }), ctx);
      sendJson(res, status, { runId: boundIdOf(record.tenant, record.taskId), status: record.status });
    });

  runAction("/runs/{runId}/cancel", 200, (runId, body, ctx) => runs.cancel(runId, ctx, reasonOf(body)));

  /** Pause and resume (runs.md "Pause and resume"): 202 with the status the action left, the run id bound. */
  const steerAction = (
    template: string,
    act: (runId: string, body: JsonObject | undefined, ctx: CallContext) => Promise<SteerRunResponse>,
  ): void =>
    v2("POST", template, async (req, res, params, ctx) => {
      const runId = runIdOf(params, ctx);
      const answer = await act(runId, await readJsonObject(req, options, { optional: true }), ctx);
      sendJson(res, 202, { ...answer, runId: boundIdOf(ctx.principal.tenant, runId) });
    });
  steerAction("/runs/{runId}:pause", (runId, body, ctx) => runs.pause(runId, ctx, decodePause(body)));
  steerAction("/runs/{runId}:resume", (runId, body, ctx) => runs.resume(runId, ctx, decodeResume(body)));

  v2("POST", "/runs/{runId}/interrupts/{nodeId}", async (req, res, params, ctx) => {
    const runId = runIdOf(params, ctx);
    const resumeValue = resumeValueOf((await readJsonObject(req, options))!);
    const record = await interrupts.resolveAtNode(runId, params["nodeId"]!, resumeValue, ctx);
    sendJson(res, 200, runSnapshotV2(runs.snapshotOf(record, ctx.principal), record));
  });

  v2("GET", "/interrupts/{token}", async (_req, res, { token }) => {
    const { tenant, inspection } = await interrupts.inspectInTenant(token!);
    sendJson(res, 200, withBoundIds(inspection, tenant), { "cache-control": "no-store" });
  });

  v2("POST", "/interrupts/{token}", async (req, res, { token }) => {
    const resumeValue = resumeValueOf((await readJsonObject(req, options))!);
    const { tenant, resolution } = await interrupts.resolveInTenant(token!, resumeValue);
    sendJson(res, 200, withBoundIds(resolution, tenant), { "cache-control": "no-store" });
  });

  v2("GET", "/workflows/{workflowId}", async (_req, res, { workflowId }, ctx) => {
    sendJson(res, 200, runs.workflow(workflowId!, ctx));
  });
}

/** `{reason?}`, the body of cancel. */
function reasonOf(body: JsonObject | undefined): string | undefined {
  if (!body) return undefined;
  onlyKnownFields(body, "body", ["reason"]);
  return optionalString(body, "reason", "body");
}

/** `streamMode` (events.md §The events channel): this host serves `updates`, the default. */
function streamModeOf(req: HttpRequest): void {
  const mode = queryOf(req).get("streamMode");
  if (mode === null || STREAM_MODES.includes(mode)) return;
  throw new DomainError(
    "unsupported-stream-mode",
    `streamMode ${JSON.stringify(mode)} is not served here; the modes served are: ${STREAM_MODES.join(", ")}`,
    { supported: STREAM_MODES },
  );
}
