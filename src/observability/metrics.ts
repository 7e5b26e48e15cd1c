import type { Attributes, Counter, Histogram, Meter, ObservableGauge, ObservableResult } from "@opentelemetry/api";

/** Latency buckets in seconds, from 1 ms (a memory-store read) to 30 s (a slow webhook, a blocking send). */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface Metrics {
  requests: Counter;
  requestDuration: Histogram;
  transitions: Counter;
  storeDuration: Histogram;
  pushDeliveries: Counter;
  pushDeadLetters: Counter;
  pushQueueLag: Histogram;
  /** Registers a callback that reports a gauge (tasks by state, live actors, open streams). */
  observe(name: GaugeName, read: (report: (value: number, attributes?: Attributes) => void) => void): void;
}

export type GaugeName = "tasks" | "actors" | "streams";

const GAUGES: Record<GaugeName, { name: string; description: string }> = {
  tasks: { name: "openwop.tasks", description: "Tasks this instance has seen, by current A2A state" },
  actors: { name: "openwop.actors.live", description: "Task actors held in memory" },
  streams: { name: "openwop.subscriber.streams", description: "Open subscriber streams (SSE, gRPC server streams, blocking sends)" },
};

/** The instruments, named `openwop.*` (Prometheus: `openwop_*`, dots become underscores). */
export function createMetrics(meter: Meter): Metrics {
  const seconds = (name: string, description: string): Histogram =>
    meter.createHistogram(name, { description, unit: "s", advice: { explicitBucketBoundaries: LATENCY_BUCKETS } });
  const gauges = new Map<GaugeName, ObservableGauge>();
  return {
    requests: meter.createCounter("openwop.requests", { description: "Inbound calls by binding, A2A version, method and outcome" }),
    requestDuration: seconds("openwop.request.duration_seconds", "Inbound call latency by binding, method and outcome"),
    transitions: meter.createCounter("openwop.task.transitions", { description: "Committed task state changes by from/to A2A state" }),
    storeDuration: seconds("openwop.store.duration_seconds", "Task store command latency by command and outcome"),
    pushDeliveries: meter.createCounter("openwop.push.deliveries", { description: "Webhook POSTs by outcome and whether it was a retry" }),
    pushDeadLetters: meter.createCounter("openwop.push.dead_letters", { description: "Push notifications given up on, by reason" }),
    pushQueueLag: seconds("openwop.push.queue_lag_seconds", "Time from the task event to its webhook POST"),
    observe(name, read) {
      let gauge = gauges.get(name);
      if (!gauge) gauges.set(name, (gauge = meter.createObservableGauge(GAUGES[name].name, { description: GAUGES[name].description })));
      gauge.addCallback((result: ObservableResult) => read((value, attributes) => result.observe(value, attributes)));
    },
  };
}
