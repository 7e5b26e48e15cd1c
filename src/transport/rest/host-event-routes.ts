import type { HostEvent, NegotiationLog } from "../../a2a/negotiation-log.js";
import { requireScope } from "../../auth/principal.js";
import { invalidParams } from "../../domain/errors.js";
import { sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";
import { HOST_PREFIX } from "./host-steering-routes.js";
import { integerParam, queryOf } from "./openwop-request.js";

const TYPES = ["negotiation.decided"] as const;

/**
 * An entry as OpenWOP v2's HostEvent has it (schemas/v2/host-event.schema.json, openwop/openwop a4576570, RFC
 * 0236 §A): durable, since the log is stored and read again by `eventId`; the count of identical decisions it
 * stands for rides in the payload. The tenant stays out: a caller reads only its own and those of no tenant.
 */
function wireHostEvent(event: HostEvent) {
  return {
    eventId: event.id,
    type: event.type,
    timestamp: event.at,
    delivery: "durable",
    payload: { ...event.payload, count: event.count },
  };
}

/**
 * `GET /host/openwop-a2a-host/events`: the host's own event log (docs/a2a.md "Version negotiation"), as the caller's
 * tenant may read it (its entries and those made before any caller was known), oldest first. `type` filters,
 * `after` is the last id of the previous page, `limit` 1 to 500 (100). Scope `runs:read`.
 */
export function addHostEventRoutes(router: HttpRouter, options: { negotiations: NegotiationLog }): void {
  router.add("GET", `${HOST_PREFIX}/events`, async (req, res, _params, ctx) => {
    requireScope(ctx.principal, "runs:read");
    const query = queryOf(req);
    const type = query.get("type") ?? undefined;
    if (type !== undefined && !(TYPES as readonly string[]).includes(type))
      throw invalidParams(`unknown event type "${type.slice(0, 60)}"; the host event log holds ${TYPES.join(", ")}`, {
        path: "query.type",
      });
    const after = query.get("after") ?? undefined;
    if (after !== undefined && !/^[0-9a-z]{1,40}$/.test(after))
      throw invalidParams("after must be the id of an event of a previous page", { path: "query.after" });
    const limit = integerParam(query.get("limit"), "limit", 100, 1, 500);
    const events = await options.negotiations.list({
      tenant: ctx.principal.tenant,
      ...(type ? { type: type as (typeof TYPES)[number] } : {}),
      ...(after ? { after } : {}),
      limit,
    });
    sendJson(res, 200, {
      events: events.map(wireHostEvent),
      ...(events.length === limit ? { nextAfter: events[events.length - 1]!.id } : {}),
    });
  });
}
