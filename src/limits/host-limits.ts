import type { Logger } from "../observability/logger.js";
import { everyLabelSet, labelSets, startAtZero } from "../observability/metrics.js";
import type { Telemetry } from "../observability/telemetry.js";
import type { TenantUsageStore } from "../store/tenant-usage-store.js";
import { REFUSAL_REASONS } from "./limit-refusals.js";
import type { OverloadSettings, TenantLimitSettings } from "./limit-settings.js";
import { OverloadMonitor } from "./overload-monitor.js";
import { TenantLimits } from "./tenant-limits.js";
import { OTHER_TENANTS } from "./tenant-usage.js";

export interface HostLimits {
  limits: TenantLimits;
  overload: OverloadMonitor;
  start(): void;
  stop(): void;
}

/** The usage gauge's `limit` label for each figure of a tenant's usage row. */
const USAGE_FIGURES = [
  ["requestsPerSecond", "requestsLastSecond"],
  ["tasksPerMinute", "tasksLastMinute"],
  ["runningTasks", "runningTasks"],
  ["streams", "streams"],
] as const;

/**
 * Tenant limits and overload shedding for one host, with their telemetry: `openwop_tenant_refusals_total{tenant,
 * reason}` (each named tenant's, and `other`'s, at 0 from the start), `openwop_tenant_usage{tenant,limit}`,
 * `openwop_tenant_limit{tenant,limit}` and `openwop_shedding`. Tenants are those TENANT_LIMITS names and the
 * first 50 others seen; the rest add up under `other`, so the series stay few.
 */
export function createHostLimits(options: {
  settings: TenantLimitSettings;
  overload: OverloadSettings;
  store?: TenantUsageStore;
  ping: () => Promise<void>;
  instanceId: string;
  heartbeatMs: number;
  ttlMs: number;
  telemetry: Telemetry;
  logger: Logger;
}): HostLimits {
  const { metrics } = options.telemetry;
  const overload = new OverloadMonitor({ settings: options.overload, ping: options.ping });
  const refusalLabels = labelSets(["tenant", "reason"]);
  const limits = new TenantLimits({
    settings: options.settings,
    ...(options.store ? { store: options.store } : {}),
    instanceId: options.instanceId,
    heartbeatMs: options.heartbeatMs,
    ttlMs: options.ttlMs,
    shedding: () => overload.shedding,
    onRefusal: (tenant, reason) => metrics.tenantRefusals.add(1, refusalLabels(tenant, reason)),
    logger: options.logger,
  });
  startAtZero(
    metrics.tenantRefusals,
    everyLabelSet({ tenant: [...Object.keys(options.settings.tenants), OTHER_TENANTS], reason: REFUSAL_REASONS }),
  );
  const usageLabels = labelSets(["tenant", "limit"]);
  metrics.observe("tenantUsage", (report) => {
    for (const row of limits.usage.view())
      for (const [limit, figure] of USAGE_FIGURES) {
        const value = row[figure];
        if (value !== undefined) report(value, usageLabels(row.tenant, limit));
      }
  });
  metrics.observe("tenantLimit", (report) => {
    for (const row of limits.view())
      for (const [limit, value] of Object.entries(row.limits)) report(value, usageLabels(row.tenant, limit));
  });
  metrics.observe("shedding", (report) => report(overload.shedding ? 1 : 0));
  return {
    limits,
    overload,
    start() {
      overload.start();
      limits.start();
    },
    stop() {
      overload.stop();
      limits.stop();
    },
  };
}
