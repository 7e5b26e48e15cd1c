import { requireScope } from "../auth/principal.js";
import type { LimitName } from "../limits/limit-settings.js";
import { REFUSAL_REASONS } from "../limits/limit-refusals.js";
import type { TenantLimits } from "../limits/tenant-limits.js";
import { sendJson } from "../transport/http-io.js";
import type { HttpRouter } from "../transport/http-router.js";
import { CONSOLE_SCOPE, type ConsoleAccess } from "./console-access.js";

export interface ConsoleLimitsOptions {
  limits: TenantLimits;
  /** Why this instance sheds new tasks now, or undefined. */
  shedding: () => string | undefined;
  access: ConsoleAccess;
}

/** One tenant's row: the limits its callers meet, its usage on this instance and its refusals since start. */
export interface ConsoleTenantLimits {
  tenant: string;
  limits: Partial<Record<LimitName, number>>;
  usage: { requestsLastSecond?: number; tasksLastMinute: number; runningTasks?: number; streams: number };
  refusals: Record<string, number>;
}

/**
 * GET /console/api/limits: the tenants the caller sees (its own; every configured one with console:all-tenants),
 * each with its limits, its usage on this instance and its refusals by reason; and this instance's share (live
 * instances) and whether it sheds new tasks. Counts are this instance's: the console of each instance shows its own.
 */
export function addConsoleLimitsRoutes(router: HttpRouter, options: ConsoleLimitsOptions): void {
  router.add("GET", "/console/api/limits", async (_req, res, _params, ctx) => {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    const visible = new Set(options.access.tenantsFor(ctx.principal));
    const seen = new Map(options.limits.view().map((row) => [row.tenant, row]));
    const tenants: ConsoleTenantLimits[] = [...visible].sort().map((tenant) => {
      const row = seen.get(tenant);
      const limits = row?.limits ?? boundValues(options.limits, tenant);
      return {
        tenant,
        limits,
        usage: {
          ...(row?.requestsLastSecond !== undefined ? { requestsLastSecond: row.requestsLastSecond } : {}),
          tasksLastMinute: row?.tasksLastMinute ?? 0,
          ...(row?.runningTasks !== undefined ? { runningTasks: row.runningTasks } : {}),
          streams: row?.streams ?? 0,
        },
        refusals: row?.refusals ?? Object.fromEntries(REFUSAL_REASONS.map((r) => [r, 0])),
      };
    });
    const shedding = options.shedding();
    sendJson(
      res,
      200,
      { liveInstances: options.limits.liveInstances, ...(shedding ? { shedding } : {}), tenants },
      { "cache-control": "no-store" },
    );
  });
}

function boundValues(limits: TenantLimits, tenant: string): Partial<Record<LimitName, number>> {
  return Object.fromEntries(Object.entries(limits.resolution.ofTenant(tenant)).map(([name, b]) => [name, b.value]));
}
