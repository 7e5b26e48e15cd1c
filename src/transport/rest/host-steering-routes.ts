import type { RunService, SteerRunResponse } from "../../runs/run-service.js";
import type { CallContext } from "../../auth/call-context.js";
import { onlyKnownFields, optionalString, requiredString, type JsonObject } from "../../domain/json-shape.js";
import { sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";
import { readJsonObject } from "./openwop-request.js";

/**
 * The host's own path prefix (openwop/openwop spec/v2/core/versioning.md a98b0205, and the v2 pointers: host-only
 * operations live under `/host/<org>/…`, never beside OpenWOP's paths). `<org>` is this package's name: the
 * operations are this host's, not a vendor profile others implement.
 */
export const HOST_PREFIX = "/host/openwop-a2a-host";

export interface HostSteeringRoutesOptions {
  runs: RunService;
  maxBodyBytes: number;
  maxInputDepth: number;
}

/** One steering operation: its verb (`POST {prefix}/runs/{runId}:<verb>`), body fields and service call. */
interface SteeringOperation {
  verb: string;
  fields: readonly string[];
  run(runs: RunService, runId: string, body: JsonObject, ctx: CallContext): Promise<SteerRunResponse>;
}

/** Adding an operation (moving a task to another version) is one more row. */
const OPERATIONS: readonly SteeringOperation[] = [
  { verb: "retry", fields: [], run: (runs, runId, _body, ctx) => runs.retry(runId, ctx) },
  {
    verb: "restart",
    fields: ["nodeId", "reason"],
    run: (runs, runId, body, ctx) =>
      runs.restart(runId, requiredString(body, "nodeId", "body"), ctx, optionalString(body, "reason", "body")),
  },
];

/** Retry and restart from a node, answered 202 with `{runId, status, nodeId}`; errors in the OpenWOP envelope. */
export function addHostSteeringRoutes(router: HttpRouter, options: HostSteeringRoutesOptions): void {
  for (const operation of OPERATIONS) {
    router.add("POST", `${HOST_PREFIX}/runs/{runId}:${operation.verb}`, async (req, res, { runId }, ctx) => {
      const body = (await readJsonObject(req, options, { optional: true })) ?? {};
      onlyKnownFields(body, "body", operation.fields);
      sendJson(res, 202, await operation.run(options.runs, runId!, body, ctx));
    });
  }
}
