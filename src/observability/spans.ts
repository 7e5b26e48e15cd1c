import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  ROOT_CONTEXT,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from "@opentelemetry/api";

export { SpanKind };

/**
 * Runs `work` inside a child span of the active one. Without a tracer (tracing off) it is a direct call:
 * no span, no context switch, no allocation beyond the closure.
 */
export async function inSpan<T>(
  tracer: Tracer | undefined,
  name: string,
  attributes: Attributes,
  work: (span: Span | undefined) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  if (!tracer) return work(undefined);
  return tracer.startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await work(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The W3C `traceparent`/`tracestate` of the active span, added to outbound request headers. */
export function injectTraceHeaders(headers: Record<string, string>): Record<string, string> {
  propagation.inject(context.active(), headers);
  return headers;
}

/** The caller's trace context from inbound `traceparent`/`tracestate` headers (root context when absent). */
export function extractTraceContext(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(context.active(), headers);
}

/**
 * Links the active (server) span to a trace context a received A2A message named in `metadata.openwop`: the
 * span was started from the `traceparent` header before the body was read, and the in-message value is the one
 * interop.md prefers, so the span points at it. Nothing without tracing (no propagator, no span).
 */
export function linkTraceContext(named: { traceparent: string; tracestate?: string } | undefined): void {
  if (!named) return;
  const span = trace.getSpan(context.active());
  if (!span) return;
  const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { ...named }));
  if (linked) span.addLink({ context: linked, attributes: { "openwop.trace.source": "message.metadata" } });
}

/** The active trace id, for log lines (undefined when tracing is off or no span is active). */
export function activeTraceId(): string | undefined {
  const span = trace.getSpan(context.active());
  return span?.spanContext().traceId;
}
