import { monitorEventLoopDelay } from "node:perf_hooks";
import type { Metrics } from "./metrics.js";

/** How finely the event-loop delay is sampled: Node's default (10 ms) would hide the stalls that matter here. */
const RESOLUTION_MS = 10;

const MEMORY_KINDS = ["rss", "heapUsed", "heapTotal", "external", "arrayBuffers"] as const;
const KIND_LABEL: Record<(typeof MEMORY_KINDS)[number], string> = {
  rss: "rss",
  heapUsed: "heap_used",
  heapTotal: "heap_total",
  external: "external",
  arrayBuffers: "array_buffers",
};

/**
 * The process as gauges: memory by kind, and event-loop delay. The delay is a histogram Node keeps; each scrape
 * reads its median, p99 and max since the previous scrape and starts it again, so a stall shows in the
 * scrape that follows it rather than being averaged away over the process's life. Answers a stop function.
 */
export function observeRuntime(metrics: Metrics): () => void {
  const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  delay.enable();
  metrics.observe("memory", (report) => {
    const usage = process.memoryUsage();
    for (const kind of MEMORY_KINDS) report(usage[kind], { kind: KIND_LABEL[kind] });
  });
  // Node measures the time between the sampling timer's runs, so an idle loop reads the resolution itself:
  // the lag is what lies beyond it. Before the first sample the histogram holds no value: no lag seen then.
  const lag = (nanoseconds: number): number =>
    delay.count > 0 ? Math.max(0, nanoseconds / 1e6 - RESOLUTION_MS) / 1000 : 0;
  metrics.observe("eventLoopLag", (report) => {
    report(lag(delay.percentile(50)), { quantile: "0.5" });
    report(lag(delay.percentile(99)), { quantile: "0.99" });
    report(lag(delay.max), { quantile: "1" });
    delay.reset();
  });
  return () => delay.disable();
}
