import { SpanStatusCode } from "@opentelemetry/api";
import type { TaskHandler } from "../workflows/workflow-types.js";
import { inSpan, injectTraceHeaders, SpanKind } from "../observability/spans.js";
import type { Telemetry } from "../observability/telemetry.js";
import type { EgressRequest, EgressResponse, EgressStream } from "../egress/egress-http-client.js";
import type { PeerTransport } from "../peer/a2a-peer-client.js";
import type { PushHttpClient } from "../push/push-http-client.js";
import { handlersAsTools } from "./observed-tools.js";
import { everyLabelSet, startAtZero } from "../observability/metrics.js";
import { countedPeerHttp, countedPeerTransport } from "./observed-peer.js";

/** How many (event, webhook) pairs are remembered to tell a first attempt from a retry. */
const SEEN_LIMIT = 10_000;

/** Task id and event time of a push body, in the 0.3 (bare status-update) or 1.0 (StreamResponse) shape. */
function pushedEvent(body: string): { taskId?: string; at?: number } {
  try {
    const parsed = JSON.parse(body) as {
      taskId?: string;
      status?: { timestamp?: string };
      statusUpdate?: { taskId?: string; status?: { timestamp?: string } };
    };
    const update = parsed.statusUpdate ?? parsed;
    const at = update.status?.timestamp ? Date.parse(update.status.timestamp) : NaN;
    return { ...(update.taskId ? { taskId: update.taskId } : {}), ...(Number.isFinite(at) ? { at } : {}) };
  } catch {
    return {};
  }
}

/**
 * The webhook client with a client span per POST (its `traceparent` on the request, so the receiver joins
 * the trace of the call that changed the task), deliveries counted by outcome and retry, and the queue lag
 * (event time → POST).
 */
export function observedPushClient(client: PushHttpClient, telemetry: Telemetry): PushHttpClient {
  const { tracer, metrics } = telemetry;
  startAtZero(
    metrics.pushDeliveries,
    everyLabelSet({ outcome: ["delivered", "failed-retryable", "failed-final"], retry: ["false", "true"] }),
  );
  const seen = new Set<string>();
  return {
    close: () => client.close(),
    async post(req) {
      const key = `${req.headers["X-A2A-Event-Id"] ?? ""} ${req.url}`;
      const retry = seen.has(key);
      if (!retry) {
        if (seen.size >= SEEN_LIMIT) seen.delete(seen.values().next().value as string);
        seen.add(key);
      }
      const event = pushedEvent(req.body);
      if (event.at !== undefined) metrics.pushQueueLag.record(Math.max(0, Date.now() - event.at) / 1000);
      const result = await inSpan(
        tracer,
        "push.deliver",
        {
          "url.full": new URL(req.url).origin,
          "openwop.push.retry": retry,
          ...(event.taskId ? { "a2a.task.id": event.taskId } : {}),
        },
        async (span) => {
          const headers = span ? injectTraceHeaders({ ...req.headers }) : req.headers;
          const answer = await client.post({ ...req, headers });
          if (span) {
            if (answer.status !== undefined) span.setAttribute("http.response.status_code", answer.status);
            if (!answer.ok)
              span.setStatus({ code: SpanStatusCode.ERROR, message: answer.error ?? `status ${answer.status}` });
          }
          return answer;
        },
        SpanKind.CLIENT,
      );
      metrics.pushDeliveries.add(1, {
        outcome: result.ok ? "delivered" : result.retryable ? "failed-retryable" : "failed-final",
        retry: String(retry),
      });
      return result;
    },
  };
}

/** The calls an HTTP client of the egress client's shape makes (a peer's, an `http` node's). */
interface ObservableHttp {
  request(req: EgressRequest): Promise<EgressResponse>;
  stream?(req: EgressRequest): Promise<EgressStream>;
  close(): Promise<void>;
}

/**
 * Outbound HTTP over the egress client (a2a.invoke's card discovery and calls to peers, `http` nodes' calls): a
 * client span per request named for its caller (`peer POST`, `http node POST`) and its `traceparent`; the
 * peer's calls are also counted (`openwop_peer_requests_total`).
 */
export function observedEgressHttp<T extends ObservableHttp>(client: T, telemetry: Telemetry, caller: string): T {
  const { tracer } = telemetry;
  const http = caller === "peer" ? countedPeerHttp(client, telemetry.metrics) : client;
  if (!tracer) return http;
  return {
    ...http,
    close: () => http.close(),
    ...(http.stream ? { stream: http.stream.bind(http) } : {}),
    request: (req: EgressRequest) =>
      inSpan(
        tracer,
        `${caller} ${req.method}`,
        { "url.full": new URL(req.url).origin, "http.request.method": req.method },
        async (span) => {
          const response = await http.request({ ...req, headers: injectTraceHeaders({ ...req.headers }) });
          span?.setAttribute("http.response.status_code", response.status);
          return response;
        },
        SpanKind.CLIENT,
      ),
  };
}

/** gRPC calls of a2a.invoke: counted, and a client span per call (the transport itself adds `traceparent` to the metadata). */
export function observedPeerTransport(client: PeerTransport, telemetry: Telemetry): PeerTransport {
  const { tracer } = telemetry;
  const transport = countedPeerTransport(client, telemetry.metrics);
  if (!tracer) return transport;
  const span = <T>(method: string, endpoint: string, work: () => Promise<T>): Promise<T> =>
    inSpan(
      tracer,
      `peer ${method}`,
      { "rpc.system": "grpc", "rpc.method": method, "server.address": endpoint },
      work,
      SpanKind.CLIENT,
    );
  return {
    send: (endpoint, message, signal) => span("SendMessage", endpoint, () => transport.send(endpoint, message, signal)),
    getTask: (endpoint, taskId, signal) => span("GetTask", endpoint, () => transport.getTask(endpoint, taskId, signal)),
    cancelTask: (endpoint, taskId, signal) =>
      span("CancelTask", endpoint, () => transport.cancelTask(endpoint, taskId, signal)),
    ...(transport.subscribe ? { subscribe: transport.subscribe.bind(transport) } : {}),
    close: () => transport.close(),
  };
}

/** Each workflow node's handler in a span (task, node, attempt); under the GenAI opt-in an execute_tool span (observed-tools.ts). */
export function observedHandlers(
  handlers: Record<string, TaskHandler>,
  telemetry: Telemetry,
): Record<string, TaskHandler> {
  const { tracer } = telemetry;
  if (!tracer) return handlers;
  if (telemetry.genAi) return handlersAsTools(handlers, telemetry);
  return Object.fromEntries(
    Object.entries(handlers).map(([type, handler]) => {
      const observed: TaskHandler = (ctx) =>
        inSpan(
          tracer,
          `node ${type}`,
          {
            "a2a.task.id": ctx.taskId,
            "openwop.node.id": ctx.nodeId,
            "openwop.node.type": type,
            "openwop.node.attempt": ctx.attempt,
          },
          () => handler(ctx),
        );
      // What the engine reads off a handler (`pure`: a blocking send's one-write path) stays readable on the wrapper.
      return [type, Object.assign(observed, handler)];
    }),
  );
}
