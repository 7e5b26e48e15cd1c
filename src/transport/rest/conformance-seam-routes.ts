import type { TaskService } from "../../a2a/task-service.js";
import { DomainError, invalidParams } from "../../domain/errors.js";
import { isTerminalRunStatus, type RunStatus } from "../../domain/run-status.js";
import type { RunService } from "../../runs/run-service.js";
import { optionalString, requiredString } from "../../domain/json-shape.js";
import type { CallContext } from "../../auth/call-context.js";
import type { PeerInvokeSeam } from "../../domain/peer-invoke-seam.js";
import { addInvokeSeamRoute } from "./invoke-seam-route.js";
import { sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";
import { readJsonObject } from "./openwop-request.js";

export interface ConformanceSeamOptions {
  service: TaskService;
  runs: RunService;
  /** The egress guard push configs are registered under (push's own check); throws invalid params naming the arm. */
  checkPushUrl(url: string, path: string): Promise<void>;
  maxBodyBytes: number;
  maxInputDepth: number;
  /** How long `tasks/start` waits for the run to reach its gate. */
  startTimeoutMs?: number;
  /** The a2a.invoke runner against a peer (the invoke seam); without it the seam is not mounted. */
  invokePeer?: PeerInvokeSeam;
}

/** Scenario → the fixture workflow it runs and the status it waits for. */
const SCENARIOS: Record<string, { workflowId: string; until: RunStatus }> = {
  "paused-at-approval": { workflowId: "conformance-approval", until: "waiting-approval" },
};

export const SEAM_PREFIX = "/v1/host/sample/a2a/tasks";

/**
 * Host-sample test seams the OpenWOP conformance suite drives (host-sample-test-seams.md). They run real
 * tasks through the normal services, under the caller's principal; nothing here bypasses a check.
 * Mounted only when CONFORMANCE_SEAMS is on.
 */
export function addConformanceSeamRoutes(router: HttpRouter, options: ConformanceSeamOptions): void {
  const { service, runs } = options;

  router.add("POST", `${SEAM_PREFIX}/start`, async (req, res, _params, ctx) => {
    const body = (await readJsonObject(req, options))!;
    const name = requiredString(body, "scenario", "body");
    if (!Object.hasOwn(SCENARIOS, name)) {
      throw invalidParams(`unknown scenario "${name}"; supported: ${Object.keys(SCENARIOS).join(", ")}`, {
        path: "body.scenario",
      });
    }
    const { taskId, state } = await startScenario(name, ctx);
    sendJson(res, 201, { taskId, runId: taskId, state });
  });

  /** Starts the scenario's run and waits until it reaches the status the scenario is about. */
  async function startScenario(name: string, ctx: CallContext): Promise<{ taskId: string; state: string }> {
    const scenario = SCENARIOS[name]!;
    const started = await runs.startRun(
      { workflowId: scenario.workflowId, inputs: { text: `conformance scenario ${name}` } },
      ctx,
    );
    const taskId = started.body.runId;
    const record = await runs.waitFor(
      taskId,
      ctx,
      (r) => r.status === scenario.until || isTerminalRunStatus(r.status),
      options.startTimeoutMs ?? 10_000,
    );
    if (record.status !== scenario.until) {
      throw new DomainError(
        "unavailable",
        `the ${name} run ${taskId} did not reach ${scenario.until} (it is ${record.status})`,
        { taskId, status: record.status },
      );
    }
    return { taskId, state: record.a2a.state };
  }

  if (options.invokePeer) {
    addInvokeSeamRoute(router, {
      runs,
      invokePeer: options.invokePeer,
      startGatedRun: async (ctx) => (await startScenario("paused-at-approval", ctx)).taskId,
      maxBodyBytes: options.maxBodyBytes,
      maxInputDepth: options.maxInputDepth,
    });
  }

  router.add("GET", `${SEAM_PREFIX}/{taskId}`, async (_req, res, { taskId }, ctx) => {
    sendJson(res, 200, await service.getA2ATaskState(taskId!, ctx));
  });

  router.add("POST", `${SEAM_PREFIX}/push-config`, async (req, res, _params, ctx) => {
    const body = (await readJsonObject(req, options))!;
    // The URL is judged before the task is looked up: an unknown task must not turn an unsafe URL into a 404.
    const url = requiredString(body, "url", "body");
    await options.checkPushUrl(url, "body.url");
    const taskId = requiredString(body, "taskId", "body");
    const token = optionalString(body, "token", "body");
    await service.getA2ATaskState(taskId, ctx);
    const config = await service.setPushConfig(taskId, { url, ...(token ? { token } : {}) }, ctx, "body");
    sendJson(res, 201, config);
  });
}
