import type { CallContext } from "../../auth/call-context.js";
import { DomainError, invalidParams } from "../../domain/errors.js";
import { optionalBoolean, optionalString, requiredString } from "../../domain/json-shape.js";
import type { PeerInvokeRequest, PeerInvokeSeam } from "../../domain/peer-invoke-seam.js";
import type { RunService } from "../../runs/run-service.js";
import type { RunSnapshot } from "../../runs/run-snapshot.js";
import { sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";
import { readJsonObject, type BodyLimits } from "./openwop-request.js";

export interface InvokeSeamOptions extends BodyLimits {
  runs: RunService;
  /** Our a2a.invoke client against a peer, in the context of our run: the seam the node kind offers (core.nodeSeams). */
  invokePeer: PeerInvokeSeam;
  /** Starts a run of ours that waits at an approval gate, and answers its id once it waits there. */
  startGatedRun(ctx: CallContext): Promise<string>;
}

export const INVOKE_SEAM_PATH = "/v1/host/sample/a2a/invoke";

/** What a peer's content could have moved in the gated run: its status and the interrupts it waits on. */
function gateOf(snapshot: RunSnapshot): string {
  return JSON.stringify([
    snapshot.status,
    snapshot.currentNodeId ?? null,
    snapshot.interrupts.map((i) => [i.interruptId, i.nodeId, i.kind]),
  ]);
}

/**
 * `POST /v1/host/sample/a2a/invoke` (host-sample-test-seams.md §22; RFC 0152 §B, §E): the suite drives our
 * a2a.invoke client against its scripted peer and reads the version used and what the peer's reply could move.
 * The node runs in the context of one of our runs paused at an approval gate; afterwards the answer compares,
 * as they are now against before the call: the gate (`approvalAdvanced`), the caller's scopes (`scopesWidened`),
 * and the peer task ids the client asked about (`referencedTaskDereferenced`: any but the task our send
 * created). The gated run is cancelled before answering. Peer failures come in the flat OpenWOP error envelope.
 */
export function addInvokeSeamRoute(router: HttpRouter, options: InvokeSeamOptions): void {
  const { runs } = options;
  router.add("POST", INVOKE_SEAM_PATH, async (req, res, _params, ctx) => {
    const body = (await readJsonObject(req, options))!;
    const peerUrl = requiredString(body, "peerUrl", "body");
    let parsed: URL | undefined;
    try {
      parsed = new URL(peerUrl);
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
      throw invalidParams("peerUrl must be an absolute http(s) URL: the peer's base URL or its agent card's URL", {
        path: "body.peerUrl",
      });
    }
    const request: PeerInvokeRequest = { peerUrl };
    for (const field of ["requestVersion", "peerOffersOnly", "scenario"] as const) {
      const value = optionalString(body, field, "body");
      if (value !== undefined) request[field] = value;
    }
    const authenticated = optionalBoolean(body, "authenticated", "body") ?? false;
    // A version we do not speak is refused before anything runs.
    options.invokePeer.check(request);

    const taskId = await options.startGatedRun(ctx).catch((err: unknown) => {
      // Not a 404: the suite reads a 404 as "no seam here", and this one is here but cannot run.
      if (err instanceof DomainError && err.code === "not-found") {
        throw new DomainError(
          "unsupported-operation",
          `the invoke seam runs the conformance-approval fixture, which is not loaded: set BUILTIN_WORKFLOWS to include conformance (e.g. demo,conformance)`,
          {},
        );
      }
      throw err;
    });
    try {
      const before = gateOf(await runs.snapshot(taskId, ctx));
      const scopesBefore = JSON.stringify(ctx.principal.scopes);
      const report = await options.invokePeer.invoke(request, { taskId, tenant: ctx.principal.tenant });
      const after = gateOf(await runs.snapshot(taskId, ctx));
      sendJson(res, 200, {
        negotiatedVersion: report.negotiatedVersion,
        preferredVersion: report.preferredVersion,
        // Said outright, never left to be inferred (RFC 0152 §B: no silent downgrade, authenticated or not).
        downgraded: report.negotiatedVersion !== report.preferredVersion,
        authenticated,
        peer: {
          ...(report.peerTaskId !== undefined ? { taskId: report.peerTaskId, state: report.peerState } : {}),
          outcome: report.outcome,
        },
        peerAuthority: {
          approvalAdvanced: after !== before,
          scopesWidened: JSON.stringify(ctx.principal.scopes) !== scopesBefore,
          referencedTaskDereferenced: report.taskReads.some((id) => id !== report.peerTaskId),
        },
        runId: taskId,
      });
    } finally {
      // The gated run only witnessed the call; it is not left waiting.
      await runs.cancel(taskId, ctx, "the invoke seam is done with it").catch(() => undefined);
    }
  });
}
