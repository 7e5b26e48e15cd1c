import { labelSets } from "../observability/metrics.js";
import type { Telemetry } from "../observability/telemetry.js";

/** Tenants with a queue-delay series of their own; later ones share `other`, so a host with many tenants keeps few series. */
export const WORK_TENANT_SERIES = 50;

/**
 * The fair queue's admissions as `openwop_work_queue_delay_seconds{tenant}`: the tenants weighted in
 * WORK_TENANT_WEIGHTS and the first WORK_TENANT_SERIES others seen have their own series, the rest count as
 * `other` (docs/operating.md "Fair work").
 */
export function workQueueDelayRecorder(
  telemetry: Telemetry,
  weighted: Readonly<Record<string, number>>,
): (tenant: string, waitedMs: number) => void {
  const labels = labelSets(["tenant"]);
  const named = new Set(Object.keys(weighted));
  const histogram = telemetry.metrics.workQueueDelay;
  return (tenant, waitedMs) => {
    if (!named.has(tenant) && named.size < Object.keys(weighted).length + WORK_TENANT_SERIES) named.add(tenant);
    histogram.record(waitedMs / 1000, labels(named.has(tenant) ? tenant : "other"));
  };
}
