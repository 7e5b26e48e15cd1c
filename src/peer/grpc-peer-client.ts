/**
 * The A2A v0.3 gRPC transport of the `a2a.invoke` node: `a2a.v1.A2AService` SendMessage, GetTask and CancelTask
 * over HTTP/2 (@connectrpc/connect-node), chosen when the peer's card prefers gRPC (a2a-peer-client.ts).
 *
 * Endpoints are recorded (in node progress) as `grpc+https://host:port` (TLS) or `grpc+http://host:port`
 * (plaintext h2c), so a restarted node knows the wire without reading the card again. Egress is guarded like
 * JSON-RPC: before every call the target, in its https:// (or http://) form, passes the same guard
 * (`checkEgressUrl`; http only to loopback under the test-only allowance), and the HTTP/2 session's socket
 * `lookup` answers only with the checked addresses. Responses are capped; each call has one deadline.
 *
 * What the peer answers is untrusted input: the proto Task is reduced to our PeerTask, dropping what does not
 * fit (unknown parts, messages without an id), like the JSON-RPC client does with JSON. The a2a.v1 part, message
 * and state conversions are the A2A 0.3 codec's, handed in (`PeerProtoCodec`) so peer does not import wire codecs.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { Artifact, Message, Part } from "../domain/a2a-types.js";
import { defaultResolver, type EgressPolicy, type ResolvedAddress, type Resolver } from "../egress/egress-guard.js";
import { errorCode, pinnedLookup } from "../egress/pinned-connection.js";
import * as pb from "../gen/a2a/v1/a2a_pb.js";
import { injectTraceHeaders } from "../observability/spans.js";
import { checkPeerUrl, DEFAULT_MAX_PEER_RESPONSE_BYTES, PeerCallError } from "./peer-http-client.js";
import type { PeerReply, PeerTask, PeerTransport } from "./peer-types.js";

/** The a2a.v1 (A2A 0.3) proto conversions the gRPC transport needs; the 0.3 proto codec module satisfies it. */
export interface PeerProtoCodec {
  /** Throws on a part it cannot decode (the part is then dropped). */
  decodePart(part: pb.Part, path: string): Part;
  encodeMessage(message: Message): pb.Message;
  /** Throws on TASK_STATE_UNSPECIFIED or an unknown number (read as "unknown"). */
  taskStateFromProto(state: pb.TaskState): string;
  isoOf(timestamp: pb.TaskStatus["timestamp"]): string | undefined;
}

/** The resource name of a task in a2a.v1 requests. */
function taskName(taskId: string): string {
  return `tasks/${taskId}`;
}

/** Marks a recorded endpoint as gRPC; what follows is the https:// or http:// origin of the target. */
export const GRPC_ENDPOINT_PREFIX = "grpc+";

const MAX_SESSIONS = 16;
const ALL_HISTORY = 2_147_483_647;
/** An HTTP/2 connection nobody used for this long is closed (a live node polls far more often). */
const IDLE_CONNECTION_MS = 30_000;

export function isGrpcEndpoint(endpoint: string): boolean {
  return endpoint.startsWith(GRPC_ENDPOINT_PREFIX);
}

function invalid(what: string): PeerCallError {
  return new PeerCallError(`the remote agent sent an invalid ${what}`, "protocol", false);
}

/**
 * A card's gRPC target as our endpoint. A 0.3 card's gRPC `url` is usually a bare `host:port` (no scheme), sometimes
 * a URL: `https://` and `grpcs://` mean TLS, `http://` and `grpc://` plaintext h2c (then refused by the egress
 * guard unless the test-only loopback allowance is on and the target is loopback). A bare target takes the
 * card's own scheme: TLS when the card came over https, which is always the case outside the test allowance.
 * A path is ignored (gRPC routes by service and method).
 */
export function grpcEndpointOf(target: string, cardUrl: string): string {
  const raw = target.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(raw);
  let url: URL;
  try {
    if (scheme) {
      const name = scheme[1]!.toLowerCase();
      const tls = name === "https" || name === "grpcs";
      if (!tls && name !== "http" && name !== "grpc") throw new Error("scheme");
      url = new URL(`${tls ? "https" : "http"}://${raw.slice(scheme[0].length)}`);
    } else {
      if (raw === "" || /[/?#@\s\\]/.test(raw)) throw new Error("not host:port");
      url = new URL(`${new URL(cardUrl).protocol === "http:" ? "http" : "https"}://${raw}`);
    }
  } catch {
    throw invalid("agent card (its gRPC url is neither host:port nor an http(s) or grpc(s) URL)");
  }
  if (!url.hostname || url.username || url.password) throw invalid("agent card (its gRPC url is neither host:port nor an http(s) or grpc(s) URL)");
  return `${GRPC_ENDPOINT_PREFIX}${url.origin}`;
}

// ------------------------------------------------------------------------------------------ decoding

function structOf(value: pb.Message["metadata"]): Record<string, unknown> | undefined {
  return value === undefined ? undefined : (value as Record<string, unknown>);
}

/** Parts the codec cannot decode (an empty oneof, an empty file URI) are dropped, as unknown JSON kinds are. */
function partsOf(parts: readonly pb.Part[], codec: PeerProtoCodec): Part[] {
  return parts.flatMap((p, i) => {
    try {
      return [codec.decodePart(p, `part[${i}]`)];
    } catch {
      return [];
    }
  });
}

function messageOf(msg: pb.Message | undefined, codec: PeerProtoCodec): Message | undefined {
  if (!msg?.messageId) return undefined;
  const metadata = structOf(msg.metadata);
  return {
    messageId: msg.messageId,
    role: msg.role === pb.Role.USER ? "user" : "agent",
    parts: partsOf(msg.content, codec),
    ...(msg.taskId ? { taskId: msg.taskId } : {}),
    ...(msg.contextId ? { contextId: msg.contextId } : {}),
    ...(metadata ? { metadata } : {}),
  };
}

function artifactOf(a: pb.Artifact, index: number, codec: PeerProtoCodec): Artifact {
  const metadata = structOf(a.metadata);
  return {
    artifactId: a.artifactId || `artifact-${index}`,
    ...(a.name ? { name: a.name } : {}),
    ...(a.description ? { description: a.description } : {}),
    parts: partsOf(a.parts, codec),
    ...(metadata ? { metadata } : {}),
  };
}

/** A peer's proto Task as our PeerTask. TASK_STATE_UNSPECIFIED (and any number we do not know) reads as "unknown". */
export function peerTaskFromProto(task: pb.Task | undefined, codec: PeerProtoCodec): PeerTask {
  if (!task) throw invalid("task (none)");
  if (!task.id || !task.status) throw invalid("task (id and status are required)");
  let state: string;
  try {
    state = codec.taskStateFromProto(task.status.state);
  } catch {
    state = "unknown";
  }
  const statusMessage = messageOf(task.status.update, codec);
  const statusTimestamp = codec.isoOf(task.status.timestamp);
  return {
    id: task.id,
    contextId: task.contextId,
    state,
    ...(statusMessage ? { statusMessage } : {}),
    ...(statusTimestamp ? { statusTimestamp } : {}),
    artifacts: task.artifacts.map((a, i) => artifactOf(a, i, codec)),
    history: task.history.flatMap((m) => messageOf(m, codec) ?? []),
  };
}

// ------------------------------------------------------------------------------------------ errors

const STATUS_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];

/**
 * gRPC statuses that may clear up on their own: the same call may succeed later. Every other status is an
 * answer (NOT_FOUND, INVALID_ARGUMENT, FAILED_PRECONDITION, UNIMPLEMENTED, …), as a JSON-RPC error other than
 * -32603 is for the JSON-RPC client.
 */
const RETRYABLE_CODES: ReadonlySet<Code> = new Set([Code.Unavailable, Code.DeadlineExceeded, Code.ResourceExhausted, Code.Internal]);

/**
 * A failed gRPC call as a PeerCallError, with the retry decision the JSON-RPC client makes for the same trouble:
 * unreachable, timed out, overloaded or an internal error → retryable; any other status → final.
 */
export function grpcCallError(err: unknown, ctx: { method: string; where: string; timeoutMs: number; callerSignal?: AbortSignal | undefined }): PeerCallError {
  if (err instanceof PeerCallError) return err;
  const { method, where } = ctx;
  if (ctx.callerSignal?.aborted) return new PeerCallError(`the call to ${where} was abandoned`, "aborted", false);
  if (!(err instanceof ConnectError)) {
    const code = errorCode(err);
    return new PeerCallError(`cannot reach ${where}${code ? ` (${code})` : ""}`, "connection", true);
  }
  const status = STATUS_NAMES[err.code] ?? String(err.code);
  const said = err.rawMessage.slice(0, 200);
  // A system error under the status means the connection itself failed (refused, reset, TLS, DNS).
  const system = errorCode(err.cause);
  if (err.code === Code.DeadlineExceeded) return new PeerCallError(`${where} did not answer ${method} within ${ctx.timeoutMs} ms`, "timeout", true, err.code);
  if (system && /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(system)) {
    return new PeerCallError(`TLS error talking to ${where} (${system})`, "connection", true, err.code);
  }
  if (err.code === Code.Unavailable && system) return new PeerCallError(`cannot reach ${where} (${system})`, "connection", true, err.code);
  if (err.code === Code.ResourceExhausted && /configured (read|write)MaxBytes/.test(err.rawMessage)) {
    // Our own cap, not the peer's quota: retrying would get the same answer.
    return new PeerCallError(`${where} answered ${method} with more than ${DEFAULT_MAX_PEER_RESPONSE_BYTES} bytes (or the message is too large to send)`, "protocol", false, err.code);
  }
  return new PeerCallError(`the remote agent answered ${method} with gRPC status ${status}${said ? ` (${said})` : ""}`, "rpc", RETRYABLE_CODES.has(err.code), err.code);
}

// ------------------------------------------------------------------------------------------ transport

export interface GrpcPeerTransportOptions {
  policy: EgressPolicy;
  codec: PeerProtoCodec;
  requestTimeoutMs: number;
  resolve?: Resolver;
  maxResponseBytes?: number;
  userAgent?: string;
}

export function createGrpcPeerTransport(opts: GrpcPeerTransportOptions): PeerTransport {
  const resolve = opts.resolve ?? defaultResolver;
  const codec = opts.codec;
  const readMaxBytes = opts.maxResponseBytes ?? DEFAULT_MAX_PEER_RESPONSE_BYTES;
  // One HTTP/2 session per origin + checked addresses: a connection is only reused for exactly what was checked.
  const sessions = new Map<string, { manager: Http2SessionManager; client: Client<typeof pb.A2AService> }>();
  let closed = false;

  function clientFor(origin: URL, addresses: readonly ResolvedAddress[]): Client<typeof pb.A2AService> {
    const key = `${origin.origin}|${addresses.map((a) => a.address).join(",")}`;
    const existing = sessions.get(key);
    if (existing) {
      sessions.delete(key);
      sessions.set(key, existing);
      return existing.client;
    }
    const hostname = origin.hostname.endsWith(".") ? origin.hostname.slice(0, -1) : origin.hostname;
    const isName = !hostname.startsWith("[") && !/^[0-9.]+$/.test(hostname);
    // node:http2 passes these to net.connect / tls.connect: the socket only ever dials a checked address.
    const nodeOptions = { lookup: pinnedLookup(addresses), ...(origin.protocol === "https:" && isName ? { servername: hostname } : {}) };
    // The session manager is ours (createGrpcTransport would otherwise make one from the same nodeOptions) so
    // close() can end its connection.
    const manager = new Http2SessionManager(origin.origin, { idleConnectionTimeoutMs: IDLE_CONNECTION_MS }, nodeOptions);
    const transport = createGrpcTransport({ baseUrl: origin.origin, sessionManager: manager, readMaxBytes, acceptCompression: [] });
    const client = createClient(pb.A2AService, transport);
    sessions.set(key, { manager, client });
    for (const [oldKey] of sessions) {
      if (sessions.size <= MAX_SESSIONS) break;
      // Not aborted: a call may still be in flight on it. Idle sessions are unref'd and close when they idle out.
      sessions.delete(oldKey);
    }
    return client;
  }

  async function call<T>(endpoint: string, method: string, run: (client: Client<typeof pb.A2AService>, options: { timeoutMs: number; signal?: AbortSignal; headers: Record<string, string> }) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (closed) throw new PeerCallError("the peer gRPC client is closed", "aborted", false);
    if (!isGrpcEndpoint(endpoint)) throw new PeerCallError("not a gRPC endpoint", "unsupported", false);
    const checked = await checkPeerUrl(endpoint.slice(GRPC_ENDPOINT_PREFIX.length), opts.policy, resolve);
    const where = `${GRPC_ENDPOINT_PREFIX}${checked.url.protocol}//${checked.url.host}`;
    try {
      return await run(clientFor(checked.url, checked.addresses), {
        timeoutMs: opts.requestTimeoutMs,
        ...(signal ? { signal } : {}),
        // traceparent of the active span (none when tracing is off), so the peer joins the caller's trace.
        headers: injectTraceHeaders({ "user-agent": opts.userAgent ?? "openwop-a2a-host/a2a-invoke" }),
      });
    } catch (err) {
      throw grpcCallError(err, { method, where, timeoutMs: opts.requestTimeoutMs, callerSignal: signal });
    }
  }

  return {
    async send(endpoint, message, signal) {
      // Non-blocking, as over JSON-RPC: the peer answers with its task at once; we record its id, then poll.
      const request = create(pb.SendMessageRequestSchema, { request: codec.encodeMessage(message), configuration: create(pb.SendMessageConfigurationSchema, { blocking: false }) });
      const response = await call(endpoint, "SendMessage", (client, options) => client.sendMessage(request, options), signal);
      switch (response.payload.case) {
        case "task":
          return { kind: "task", task: peerTaskFromProto(response.payload.value, codec) } satisfies PeerReply;
        case "msg": {
          const reply = messageOf(response.payload.value, codec);
          if (!reply) throw invalid("SendMessage response (message without an id)");
          return { kind: "message", message: reply } satisfies PeerReply;
        }
        default:
          throw invalid("SendMessage response (neither a task nor a message)");
      }
    },

    async getTask(endpoint, taskId, signal) {
      // The whole history tells whether a forwarded reply already arrived. history_length 0 means "all" in the
      // v0.3 proto but "none" to peers that read it with 1.0 semantics (the @a2a-js/sdk v0.3 gRPC service does),
      // so ask for the most an int32 can say, which both read as "all".
      const request = create(pb.GetTaskRequestSchema, { name: taskName(taskId), historyLength: ALL_HISTORY });
      return peerTaskFromProto(await call(endpoint, "GetTask", (client, options) => client.getTask(request, options), signal), codec);
    },

    async cancelTask(endpoint, taskId, signal) {
      const request = create(pb.CancelTaskRequestSchema, { name: taskName(taskId) });
      return peerTaskFromProto(await call(endpoint, "CancelTask", (client, options) => client.cancelTask(request, options), signal), codec);
    },

    async close(): Promise<void> {
      closed = true;
      for (const { manager } of sessions.values()) manager.abort();
      sessions.clear();
    },
  };
}
