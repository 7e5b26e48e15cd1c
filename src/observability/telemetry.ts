import type { IncomingMessage, ServerResponse } from "node:http";
import { context, propagation, type Meter, type Tracer } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader, type MetricReader } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { genAiOptedIn } from "./gen-ai-conventions.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { observeRuntime } from "./runtime-metrics.js";

/** The environment variables telemetry reads (the standard OTEL_* names). */
export type TelemetryEnv = Partial<Record<string, string>>;

export interface Telemetry {
  /** Undefined when tracing is off: every span helper then runs the work directly, with no allocation. */
  tracer: Tracer | undefined;
  /**
   * Spans in the OpenTelemetry GenAI conventions (`invoke_agent`, `execute_tool`): asked for with
   * `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`, and only when tracing is on.
   */
  genAi: boolean;
  metrics: Metrics;
  /** Serves the Prometheus text format (GET /metrics). */
  serveMetrics(req: IncomingMessage, res: ServerResponse): void;
  /** Flushes and stops the exporters. */
  shutdown(): Promise<void>;
}

const SERVICE = "openwop-a2a-host";

/** OTLP over HTTP is on when an endpoint is configured and neither the SDK nor that signal's exporter is turned off. */
function otlpOn(env: TelemetryEnv, signal: "TRACES" | "METRICS"): boolean {
  if (env["OTEL_SDK_DISABLED"]?.toLowerCase() === "true") return false;
  if (env[`OTEL_${signal}_EXPORTER`]?.toLowerCase() === "none") return false;
  return Boolean(env["OTEL_EXPORTER_OTLP_ENDPOINT"] || env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`]);
}

/** The signal's URL: its own endpoint as given, else the base endpoint plus `/v1/traces` or `/v1/metrics`. */
function otlpUrl(env: TelemetryEnv, signal: "TRACES" | "METRICS"): string {
  const own = env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`];
  if (own) return own;
  return `${(env["OTEL_EXPORTER_OTLP_ENDPOINT"] ?? "").replace(/\/$/, "")}/v1/${signal.toLowerCase()}`;
}

let contextInstalled = false;

/** Context propagation through async calls, and W3C traceparent, installed once per process (only when tracing). */
function installContext(): void {
  if (contextInstalled) return;
  contextInstalled = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

/**
 * Metrics are always collected (in memory, for /metrics). Traces exist only when OTLP export is configured
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); the exporters read the other
 * standard variables (headers, timeout, protocol paths) themselves.
 */
export async function createTelemetry(options: { env?: TelemetryEnv; version?: string } = {}): Promise<Telemetry> {
  const env = options.env ?? {};
  const resource = resourceFromAttributes({
    "service.name": env["OTEL_SERVICE_NAME"] || SERVICE,
    ...(options.version ? { "service.version": options.version } : {}),
  });
  const prometheus = new PrometheusExporter({ preventServerStart: true });
  const readers: MetricReader[] = [prometheus];
  if (otlpOn(env, "METRICS")) {
    const intervalMs = Number(env["OTEL_METRIC_EXPORT_INTERVAL"]) || 60_000;
    // Loaded only when configured: the OTLP exporters cost start-up time that an unconfigured instance does not pay.
    const { OTLPMetricExporter } = await import("@opentelemetry/exporter-metrics-otlp-http");
    readers.push(
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: otlpUrl(env, "METRICS") }),
        exportIntervalMillis: intervalMs,
      }),
    );
  }
  const meterProvider = new MeterProvider({ resource, readers });
  const meter: Meter = meterProvider.getMeter(SERVICE);

  let tracerProvider: BasicTracerProvider | undefined;
  if (otlpOn(env, "TRACES")) {
    installContext();
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
    tracerProvider = new BasicTracerProvider({
      resource,
      spanProcessors: [
        new BatchSpanProcessor(new OTLPTraceExporter({ url: otlpUrl(env, "TRACES") }), {
          scheduledDelayMillis: Number(env["OTEL_BSP_SCHEDULE_DELAY"]) || 1_000,
        }),
      ],
    });
  }
  const metrics = createMetrics(meter);
  const stopRuntime = observeRuntime(metrics);
  return {
    tracer: tracerProvider?.getTracer(SERVICE, options.version),
    genAi: tracerProvider !== undefined && genAiOptedIn(env["OTEL_SEMCONV_STABILITY_OPT_IN"]),
    metrics,
    serveMetrics: (req, res) => prometheus.getMetricsRequestHandler(req, res),
    async shutdown() {
      stopRuntime();
      await tracerProvider?.shutdown();
      await meterProvider.shutdown();
    },
  };
}
