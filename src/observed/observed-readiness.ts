import type { Metrics } from "../observability/metrics.js";
import type { Readiness, ReadinessReport } from "../observability/readiness.js";

/**
 * Readiness as gauges, checked at each scrape (one check serves both): `openwop_ready` as /readyz answers, and
 * `openwop_store_up`, whether the store answered its ping. A scrape waits at most READINESS_TIMEOUT_MS for it.
 * The alerts read these rather than the probes' view, which Kubernetes keeps to itself.
 */
export function observeReadiness(readiness: Pick<Readiness, "check">, metrics: Metrics): void {
  let checking: Promise<ReadinessReport> | undefined;
  const check = (): Promise<ReadinessReport> => {
    checking ??= readiness.check().finally(() => (checking = undefined));
    return checking;
  };
  metrics.observe("ready", async (report) => report((await check()).ready ? 1 : 0));
  metrics.observe("storeUp", async (report) => report((await check()).checks.store === "ok" ? 1 : 0));
}
