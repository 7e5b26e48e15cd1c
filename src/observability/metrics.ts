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
  /** Node executions found cut short by the death of their instance (each is run again, up to RECOVERY_MAX_ATTEMPTS). */
  nodeInterruptions: Counter;
  /** Runs failed with `poison_exhausted`: a node killed its instance RECOVERY_MAX_ATTEMPTS times. */
  poisonExhausted: Counter;
  /** Tasks left at a node this instance lacks what it needs for (a handler, peer, variable or kind of their version). */
  blockedNodes: Counter;
  /** Executions of a suspect node run alone on their instance (it died once, not run alone). */
  isolatedRuns: Counter;
  /** Instance deaths charged to a node: it was running alone (counted toward RECOVERY_MAX_ATTEMPTS). */
  chargedCrashes: Counter;
  /** How long node work waited for its tenant's turn on this instance (fair work), by tenant. */
  workQueueDelay: Histogram;
  /** Calls refused by a tenant limit (TENANT_LIMITS) or shed under overload, by tenant and reason. */
  tenantRefusals: Counter;
  /** Connections the port closed at once: over MAX_CONNECTIONS or MAX_CONNECTIONS_PER_CLIENT. */
  connectionsRefused: Counter;
  /** Connections the port closed for a header, HTTP/2 SETTINGS or idle timeout. */
  connectionsTimedOut: Counter;
  /** Outbound TLS handshakes that failed (OIDC issuers, peers), by subject and cause (unknown-ca, expired, …). */
  egressTlsFailures: Counter;
  /** Task leases taken from a holder that never gave them back (it died or stalled; or this id's own from before a restart). */
  leaseTakeovers: Counter;
  /** Calls to peer agents (a2a.invoke: card discovery, JSON-RPC, HTTP+JSON, gRPC) by transport and outcome. */
  peerRequests: Counter;
  peerRequestDuration: Histogram;
  /** A2A version negotiations of inbound calls, by negotiated version, outcome and reason (negotiation.decided). */
  negotiations: Counter;
  /**
   * Registers a callback that reports a gauge (tasks by state, live actors, open streams, readiness). It may
   * answer a promise (a readiness ping): the scrape waits for it, bounded by the check's own timeout.
   */
  observe(
    name: GaugeName,
    read: (report: (value: number, attributes?: Attributes) => void) => void | Promise<void>,
  ): void;
}

export type GaugeName =
  | "tasks"
  | "actors"
  | "streams"
  | "connections"
  | "consoleStreams"
  | "pushBacklog"
  | "ready"
  | "storeUp"
  | "memory"
  | "eventLoopLag"
  | "tenantUsage"
  | "tenantLimit"
  | "shedding";

const GAUGES: Record<GaugeName, { name: string; description: string }> = {
  tasks: { name: "openwop.tasks", description: "Tasks this instance has seen, by tenant and current A2A state" },
  actors: { name: "openwop.actors.live", description: "Task actors held in memory" },
  streams: {
    name: "openwop.subscriber.streams",
    description: "Open subscriber streams (SSE, gRPC server streams, blocking sends)",
  },
  connections: {
    name: "openwop.connections.open",
    description: "Open TCP connections on the listening port (HTTP/1.1 and h2c)",
  },
  consoleStreams: { name: "openwop.console.streams", description: "Open operator-console task-list streams (SSE)" },
  pushBacklog: {
    name: "openwop.push.backlog",
    description: "Push configs this instance has a delivery running, queued for a slot, or waiting to retry for",
  },
  ready: {
    name: "openwop.ready",
    description: "1 when this instance is ready for traffic (as /readyz), else 0; checked at each scrape",
  },
  storeUp: {
    name: "openwop.store.up",
    description: "1 when the task store answered a ping within READINESS_TIMEOUT_MS at this scrape, else 0",
  },
  memory: {
    name: "openwop.process.memory_bytes",
    description: "Process memory by kind (rss, heap_used, heap_total, external, array_buffers)",
  },
  tenantUsage: {
    name: "openwop.tenant.usage",
    description:
      "A tenant's usage on this instance, by limit: requests in the last second, tasks created in the last minute, open streams, its unfinished tasks at the last creation",
  },
  tenantLimit: {
    name: "openwop.tenant.limit",
    description:
      "The limit a tenant's callers meet (TENANT_LIMITS, without a key's own entry), by limit; absent = unlimited",
  },
  shedding: {
    name: "openwop.shedding",
    description: "1 while this instance sheds new tasks (event-loop delay or store latency over its limit), else 0",
  },
  eventLoopLag: {
    name: "openwop.event_loop.lag_seconds",
    description:
      "Event-loop lag (delay past the 10 ms sampling interval) since the previous scrape, by quantile (0.5, 0.99, 1 = max)",
  },
};

/** The instruments, named `openwop.*` (Prometheus: `openwop_*`, dots become underscores). */
export function createMetrics(meter: Meter): Metrics {
  const seconds = (name: string, description: string): Histogram =>
    meter.createHistogram(name, { description, unit: "s", advice: { explicitBucketBoundaries: LATENCY_BUCKETS } });
  const gauges = new Map<GaugeName, ObservableGauge>();
  return {
    requests: meter.createCounter("openwop.requests", {
      description: "Inbound calls by binding, A2A version, method and outcome",
    }),
    requestDuration: seconds("openwop.request.duration_seconds", "Inbound call latency by binding, method and outcome"),
    transitions: meter.createCounter("openwop.task.transitions", {
      description: "Committed task state changes by from/to A2A state",
    }),
    storeDuration: seconds("openwop.store.duration_seconds", "Task store command latency by command and outcome"),
    pushDeliveries: meter.createCounter("openwop.push.deliveries", {
      description: "Webhook POSTs by outcome and whether it was a retry",
    }),
    pushDeadLetters: meter.createCounter("openwop.push.dead_letters", {
      description: "Push notifications given up on, by reason",
    }),
    pushQueueLag: seconds("openwop.push.queue_lag_seconds", "Time from the task event to its webhook POST"),
    nodeInterruptions: meter.createCounter("openwop.node.interruptions", {
      description: "Node executions cut short by the death of their instance, found on takeover or restart",
    }),
    poisonExhausted: meter.createCounter("openwop.poison_exhausted", {
      description: "Runs failed because a node killed its instance RECOVERY_MAX_ATTEMPTS times",
    }),
    blockedNodes: meter.createCounter("openwop.node.blocked", {
      description: "Tasks blocked at a node whose pinned workflow version needs what this instance lacks",
    }),
    isolatedRuns: meter.createCounter("openwop.node.isolated_runs", {
      description: "Executions of a suspect node run alone on this instance after it died once, not run alone",
    }),
    chargedCrashes: meter.createCounter("openwop.node.charged_crashes", {
      description: "Instance deaths charged to a node that was running alone (toward RECOVERY_MAX_ATTEMPTS)",
    }),
    workQueueDelay: seconds(
      "openwop.work.queue_delay_seconds",
      "Time node work waited for its tenant's turn on this instance, by tenant (weighted tenants and the first 50 others seen; the rest as other)",
    ),
    tenantRefusals: meter.createCounter("openwop.tenant.refusals", {
      description:
        "Calls refused by a tenant limit or shed under overload, by tenant (named ones and the first 50 others; the rest as other) and reason",
    }),
    connectionsRefused: meter.createCounter("openwop.connections.refused", {
      description: "New connections closed at once, by the cap they were over",
    }),
    connectionsTimedOut: meter.createCounter("openwop.connections.timed_out", {
      description: "Connections closed by a timeout (headers, http2-settings, idle), by protocol",
    }),
    egressTlsFailures: meter.createCounter("openwop.egress.tls_failures", {
      description:
        "Outbound TLS handshakes that failed, by subject (OIDC, peer) and cause (unknown-ca, expired, not-yet-valid, name-mismatch, other)",
    }),
    leaseTakeovers: meter.createCounter("openwop.lease.takeovers", {
      description:
        "Task leases taken from a holder that never released them (it died or stalled, or this instance before a restart)",
    }),
    peerRequests: meter.createCounter("openwop.peer.requests", {
      description: "Calls to peer agents by transport (http, grpc) and outcome (ok, error, no-answer)",
    }),
    negotiations: meter.createCounter("openwop.a2a.negotiations", {
      description:
        "A2A version negotiations of inbound calls by negotiated version (none when refused), outcome and reason",
    }),
    peerRequestDuration: seconds(
      "openwop.peer.request.duration_seconds",
      "Peer agent call latency by transport and outcome",
    ),
    observe(name, read) {
      let gauge = gauges.get(name);
      if (!gauge)
        gauges.set(
          name,
          (gauge = meter.createObservableGauge(GAUGES[name].name, { description: GAUGES[name].description })),
        );
      gauge.addCallback((result: ObservableResult) => read((value, attributes) => result.observe(value, attributes)));
    },
  };
}

/**
 * Exports each label set at 0 from now on. OpenTelemetry leaves a never-incremented series out of /metrics,
 * and an absent series hides an alert (`increase(x[15m]) > 0` is empty, not false) and shows "No data" where
 * the truth is "none yet": so each place that counts starts the label sets it knows in advance when it is set
 * up (docs/operating.md "Dashboards and alerts").
 */
export function startAtZero(counter: Counter, labelSets: readonly Attributes[] = [{}]): void {
  for (const labels of labelSets) counter.add(0, labels);
}

/** Every combination of the given label values, as attribute objects (the label sets a counter starts with). */
export function everyLabelSet(values: Record<string, readonly string[]>): Attributes[] {
  let sets: Attributes[] = [{}];
  for (const [key, options] of Object.entries(values))
    sets = sets.flatMap((set) => options.map((value) => ({ ...set, [key]: value })));
  return sets;
}

/** Distinct label sets a cache keeps; past it (never with our bounded labels) each call builds its own object. */
const MAX_LABEL_SETS = 4096;

type LabelValues = (a: string, b?: string, c?: string, d?: string) => Attributes;

/**
 * One frozen attribute object per label set, found through nested maps by value: recording a metric then
 * allocates no attribute object (and no key string) per call. Up to four labels, in the order of `keys`.
 */
export function labelSets(keys: readonly [string, ...string[]]): LabelValues {
  if (keys.length > 4) throw new Error("labelSets takes at most four labels");
  const root = new Map<string, unknown>();
  const depth = keys.length;
  let count = 0;
  const valueAt = (i: number, a: string, b?: string, c?: string, d?: string): string =>
    (i === 0 ? a : i === 1 ? b : i === 2 ? c : d) ?? "";
  const build: LabelValues = (a, b, c, d) => {
    const attributes: Attributes = {};
    for (let i = 0; i < depth; i++) attributes[keys[i]!] = valueAt(i, a, b, c, d);
    return Object.freeze(attributes);
  };
  return (a, b, c, d) => {
    let level = root;
    for (let i = 0; i < depth - 1; i++) {
      const value = valueAt(i, a, b, c, d);
      let next = level.get(value) as Map<string, unknown> | undefined;
      if (!next) {
        if (count >= MAX_LABEL_SETS) return build(a, b, c, d);
        level.set(value, (next = new Map()));
      }
      level = next;
    }
    const last = valueAt(depth - 1, a, b, c, d);
    let attributes = level.get(last) as Attributes | undefined;
    if (!attributes) {
      if (count >= MAX_LABEL_SETS) return build(a, b, c, d);
      count++;
      level.set(last, (attributes = build(a, b, c, d)));
    }
    return attributes;
  };
}
