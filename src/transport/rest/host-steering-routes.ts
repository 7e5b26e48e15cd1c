import type { RunService, SteerRunResponse } from "../../runs/run-service.js";
import type { CallContext } from "../../auth/call-context.js";
import { invalidParams } from "../../domain/errors.js";
import {
  onlyKnownFields,
  optionalObject,
  optionalString,
  requiredString,
  type JsonObject,
} from "../../domain/json-shape.js";
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

/** Adding an operation is one more row. */
const OPERATIONS: readonly SteeringOperation[] = [
  { verb: "retry", fields: [], run: (runs, runId, _body, ctx) => runs.retry(runId, ctx) },
  {
    verb: "restart",
    fields: ["nodeId", "reason"],
    run: (runs, runId, body, ctx) =>
      runs.restart(runId, requiredString(body, "nodeId", "body"), ctx, optionalString(body, "reason", "body")),
  },
  {
    // docs/workflows.md "Changing a workflow": `nodes` maps the run's current node to a node of `toVersion`.
    verb: "move",
    fields: ["toVersion", "nodes", "reason"],
    run: (runs, runId, body, ctx) => {
      const reason = optionalString(body, "reason", "body");
      return runs.move(
        runId,
        {
          toVersion: requiredString(body, "toVersion", "body"),
          nodes: nodeMapping(body),
          ...(reason ? { reason } : {}),
        },
        ctx,
      );
    },
  },
];

/** `nodes`: an object of node ids to node ids. */
function nodeMapping(body: JsonObject): Record<string, string> {
  const nodes = optionalObject(body, "nodes", "body");
  if (!nodes || !Object.values(nodes).every((v) => typeof v === "string"))
    throw invalidParams(
      'body.nodes must map the run\'s current node to a node of toVersion, e.g. {"approve": "review"}',
      {
        path: "body.nodes",
      },
    );
  return nodes as Record<string, string>;
}

/** Retry, restart from a node and move to another version, answered 202 with `{runId, status, nodeId}`; errors in the OpenWOP envelope. */
export function addHostSteeringRoutes(router: HttpRouter, options: HostSteeringRoutesOptions): void {
  for (const operation of OPERATIONS) {
    router.add("POST", `${HOST_PREFIX}/runs/{runId}:${operation.verb}`, async (req, res, { runId }, ctx) => {
      const body = (await readJsonObject(req, options, { optional: true })) ?? {};
      onlyKnownFields(body, "body", operation.fields);
      sendJson(res, 202, await operation.run(options.runs, runId!, body, ctx));
    });
  }
}
