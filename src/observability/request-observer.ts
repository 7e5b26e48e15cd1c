import { GRPC_STATUS_NAMES } from "../domain/grpc-status.js";
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { GEN_AI_PROVIDER, invokeAgentSpanName, type AgentIdentity } from "./gen-ai-conventions.js";
import type { Logger } from "./logger.js";
import { labelSets } from "./metrics.js";
import { withRequestNotes, type A2ANegotiationNote, type RequestNotes } from "./request-notes.js";
import { extractTraceContext } from "./spans.js";
import type { Telemetry } from "./telemetry.js";

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

/** Probes and scrapes: counted, but logged at debug and never traced (they would drown everything else). */
const OPS_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

/**
 * The request path as logs and spans show it: without the query, and with the credential of signed
 * interrupt URLs (`/v1/interrupts/<token>`: the token is the credential) replaced.
 */
export function loggablePath(url: string | undefined): string {
  const path = pathOf(url);
  return path.startsWith("/v1/interrupts/")
    ? path.replace(/^\/v1\/interrupts\/[^/]+/, "/v1/interrupts/[redacted]")
    : path;
}

/** The request path without the query (no array per request, as `split` would make). */
function pathOf(url: string | undefined): string {
  const raw = url ?? "/";
  const query = raw.indexOf("?");
  return query < 0 ? raw : raw.slice(0, query);
}

export interface RequestShape {
  binding: "grpc" | "grpc-web" | "connect" | "jsonrpc" | "http";
  /** RPC method, or undefined until a lower layer notes it. */
  method: string | undefined;
}

/**
 * Binding and method as far as the request line and headers tell. Only served RPC methods name themselves:
 * any other path would let a caller mint metric label values at will.
 */
export function requestShape(req: Req, jsonRpcPath: string, rpcMethods: ReadonlySet<string>): RequestShape {
  const path = pathOf(req.url);
  const contentType = String(req.headers["content-type"] ?? "");
  const rpc = /^\/([a-z][\w.]*\.[A-Z]\w*)\/(\w+)$/.exec(path);
  if (rpc) {
    const binding = contentType.startsWith("application/grpc-web")
      ? "grpc-web"
      : contentType.startsWith("application/grpc")
        ? "grpc"
        : "connect";
    const method = `${rpc[1]}/${rpc[2]}`;
    return { binding, method: rpcMethods.has(method) ? method : undefined };
  }
  if (path === jsonRpcPath) return { binding: "jsonrpc", method: undefined };
  return { binding: "http", method: undefined };
}

function grpcStatusOf(headers: OutgoingHttpHeaders | Record<string, unknown> | undefined): string | undefined {
  const value = headers?.["grpc-status"];
  if (value === undefined) return undefined;
  return GRPC_STATUS_NAMES[Number(value)] ?? String(value);
}

/**
 * Wraps every inbound call: one server span (the caller's `traceparent` continued), the request counter and
 * latency histogram, and one JSON access line when the response ends. Lower layers add the method, task id
 * and tenant through `noteRequest`. Under the GenAI opt-in (telemetry.genAi) a call that sends the agent a message
 * is the `invoke_agent {agent}` span of the GenAI conventions instead (still kind SERVER: it is the remote side of
 * the caller's invoke_agent CLIENT span), with the RPC attributes kept beside the gen_ai ones.
 */
export function createRequestObserver(options: {
  telemetry: Telemetry;
  logger: Logger;
  jsonRpcPath: string;
  rpcMethods: Iterable<string>;
  /** The A2A versions, as the registry knows them (a2a/versions.ts): observability names none itself. */
  versions: ObservedVersions;
  /** This host as an agent (the card's name, URL, version): the gen_ai.agent.* attributes of invoke_agent spans. */
  agent?: AgentIdentity;
  /** Each call's `A2A-Version` decision, as it ends, with the caller's tenant and address (`negotiation.decided`). */
  negotiations?: (
    decision: A2ANegotiationNote,
    caller: { tenant?: string | undefined; address?: string | undefined },
  ) => void;
}) {
  const { telemetry, logger, jsonRpcPath, versions, agent, negotiations } = options;
  const rpcMethods = new Set(options.rpcMethods);
  const { tracer, metrics } = telemetry;
  const requestLabels = labelSets(["binding", "method", "outcome", "a2a.version"]);
  return function observe(req: Req, res: Res, handle: () => void): void {
    const started = performance.now();
    const shape = requestShape(req, jsonRpcPath, rpcMethods);
    const path = loggablePath(req.url);
    const ops = OPS_PATHS.has(path);
    const notes: RequestNotes = {};
    let grpcStatus: string | undefined;
    let jsonRpcCode: number | undefined;
    // The gRPC status travels in headers (trailers-only) or trailers, only on the Connect handler's bindings;
    // JSON-RPC errors inside a 200 body. Plain HTTP answers need neither wrapper.
    if (shape.binding !== "jsonrpc" && shape.binding !== "http") {
      const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Res;
      (res as { writeHead: unknown }).writeHead = (...args: unknown[]) => {
        const headers = args.find((a) => typeof a === "object" && a !== null) as OutgoingHttpHeaders | undefined;
        grpcStatus ??= grpcStatusOf(headers) ?? grpcStatusOf(res.getHeaders());
        return writeHead(...args);
      };
      const addTrailers = res.addTrailers.bind(res) as (headers: OutgoingHttpHeaders) => void;
      (res as { addTrailers: unknown }).addTrailers = (headers: OutgoingHttpHeaders) => {
        grpcStatus = grpcStatusOf(headers) ?? grpcStatus;
        addTrailers(headers);
      };
    } else if (shape.binding === "jsonrpc") {
      const end = res.end.bind(res) as (...args: unknown[]) => Res;
      (res as { end: unknown }).end = (...args: unknown[]) => {
        const body = args[0];
        if ((typeof body === "string" || Buffer.isBuffer(body)) && body.length < 65_536) {
          const code = /"error":\{"code":(-?\d+)/.exec(body.toString());
          if (code) jsonRpcCode = Number(code[1]);
        }
        return end(...args);
      };
    }

    const span =
      tracer && !ops
        ? tracer.startSpan(
            `${req.method ?? "GET"} ${shape.method ?? path}`,
            {
              kind: SpanKind.SERVER,
              attributes: { "rpc.system": shape.binding, "http.request.method": req.method ?? "", "url.path": path },
            },
            extractTraceContext(req.headers),
          )
        : undefined;

    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      const seconds = (performance.now() - started) / 1000;
      const status = res.statusCode;
      const outcome = grpcStatus ?? (jsonRpcCode !== undefined ? String(jsonRpcCode) : String(status));
      const method = notes.method ?? shape.method ?? (ops ? `${req.method} ${path}` : "unmatched");
      const version = notes.version ?? versionOf(req, shape, versions);
      const labels = requestLabels(shape.binding, method, outcome, version);
      metrics.requests.add(1, labels);
      metrics.requestDuration.record(seconds, labels);
      if (notes.a2aNegotiation && negotiations)
        negotiations(notes.a2aNegotiation, { tenant: notes.tenant, address: req.socket?.remoteAddress });
      if (span) {
        const invocation = telemetry.genAi && notes.invokesAgent === true;
        span.updateName(invocation ? invokeAgentSpanName(agent?.name) : `${shape.binding} ${method}`);
        span.setAttributes({
          "rpc.method": method,
          "a2a.version": version,
          "openwop.outcome": outcome,
          "http.response.status_code": status,
          ...(notes.taskId ? { "a2a.task.id": notes.taskId } : {}),
          ...(notes.tenant ? { "openwop.tenant": notes.tenant } : {}),
        });
        const failed =
          status >= 500 ||
          (grpcStatus !== undefined &&
            ["UNKNOWN", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "DEADLINE_EXCEEDED"].includes(grpcStatus));
        if (invocation) {
          span.setAttributes({
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": GEN_AI_PROVIDER,
            ...(agent?.name ? { "gen_ai.agent.name": agent.name } : {}),
            ...(agent?.id ? { "gen_ai.agent.id": agent.id } : {}),
            ...(agent?.version ? { "gen_ai.agent.version": agent.version } : {}),
            ...(notes.contextId ? { "gen_ai.conversation.id": notes.contextId } : {}),
            ...(failed ? { "error.type": outcome } : {}),
          });
        }
        if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
        span.end();
      }
      const level = ops ? "debug" : "info";
      if (!logger.isLevelEnabled(level)) return;
      const line = {
        access: true,
        binding: shape.binding,
        version,
        method,
        path,
        status,
        outcome,
        durationMs: Math.round(seconds * 10_000) / 10,
        ...(notes.taskId ? { taskId: notes.taskId } : {}),
        ...(notes.tenant ? { tenant: notes.tenant } : {}),
        ...(span ? { traceId: span.spanContext().traceId } : {}),
      };
      logger[level](line, "request");
    };
    res.once("finish", finish);
    res.once("close", finish);
    const run = (): void => withRequestNotes(notes, handle);
    if (span) context.with(trace.setSpan(context.active(), span), run);
    else run();
  };
}

/** What the observer asks the version registry. */
export interface ObservedVersions {
  /** The version whose gRPC service is `typeName` (`lf.a2a.v1.A2AService` → 1.0); undefined outside A2A. */
  ofRpcService(typeName: string): string | undefined;
  /** What a request that names no version speaks (0.3). */
  unnamed: string;
}

/**
 * The A2A version of a call: the registry says whose gRPC service it is; over HTTP the `A2A-Version` header,
 * absent meaning the unnamed version on A2A paths; "" for calls outside A2A (OpenWOP, probes, gRPC health).
 * (JSON-RPC notes the version of its method when it routes the call.)
 */
function versionOf(req: Req, shape: RequestShape, versions: ObservedVersions): string {
  if (shape.method !== undefined) {
    const version = versions.ofRpcService(shape.method.slice(0, shape.method.indexOf("/")));
    if (version !== undefined) return version;
  }
  if (shape.binding !== "http" && shape.binding !== "jsonrpc") return "";
  const header = headerOf(req, "a2a-version");
  if (header) return header;
  const path = req.url ?? "";
  return shape.binding === "jsonrpc" || /^\/(v1\/)?(message|tasks)\b|^\/[^/]+\/tasks\b/.test(path)
    ? versions.unnamed
    : "";
}

function headerOf(req: Req, name: string): string | undefined {
  const value = req.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first || undefined;
}
