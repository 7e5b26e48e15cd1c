/**
 * The gRPC wire of the `a2a.invoke` node, every version over HTTP/2 (@connectrpc/connect-node): A2A 1.0 is
 * `lf.a2a.v1.A2AService`, A2A 0.3 `a2a.v1.A2AService` — SendMessage, GetTask and CancelTask, chosen by the
 * version the recorded endpoint names (`grpc+1.0+https://host:port`; `grpc+https://…` from before versions were
 * named reads as 0.3). `https://` is TLS, `http://` plaintext h2c (test-only loopback allowance).
 *
 * Egress is guarded like the HTTP wires: before every call the target, in its https:// (or http://) form, passes
 * the same guard (`checkEgressUrl`; http only to loopback under the test-only allowance), and the HTTP/2
 * session's socket `lookup` answers only with the checked addresses. Responses are capped; each call has one
 * deadline. The peer's credentials go in the call's metadata (`authorization` or the API key header) with
 * `a2a-version`, and never into an error message; its client certificate (mTLS), if any, on its own sessions.
 *
 * Each version's service descriptor, requests and readers are its module's client half (peer-version.ts: the
 * `grpc` part of each version folder's peer client codec, e.g. `src/a2a/v10/v10-peer-client-codec.ts`); what the peer answers is untrusted input, reduced to our
 * PeerTask there.
 */
import { GRPC_STATUS_NAMES } from "../domain/grpc-status.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { defaultResolver, type EgressPolicy, type ResolvedAddress, type Resolver } from "../egress/egress-guard.js";
import { errorCode, pinnedLookup } from "../egress/pinned-connection.js";
import { isTlsFailureCode } from "../egress/tls-failure-report.js";
import { UNNAMED_A2A_VERSION } from "../domain/a2a-version.js";
import { injectTraceHeaders } from "../observability/spans.js";
import { formatPeerEndpoint, grpcOriginOf, parsePeerEndpoint, type PeerVersion } from "./peer-endpoint.js";
import {
  checkPeerUrl,
  DEFAULT_MAX_PEER_RESPONSE_BYTES,
  PeerCallError,
  type PeerClientTls,
} from "./peer-http-client.js";
import {
  DEFAULT_STREAM_IDLE_MS,
  type PeerCallOptions,
  type PeerStreamEvent,
  type PeerTransport,
} from "./peer-types.js";
import { peerVersionIn, type PeerGrpcCallOptions, type PeerGrpcClient, type PeerVersions } from "./peer-version.js";

const MAX_SESSIONS = 16;
/** An HTTP/2 connection nobody used for this long is closed (a live node polls far more often). */
const IDLE_CONNECTION_MS = 30_000;

export function isGrpcEndpoint(endpoint: string): boolean {
  return endpoint.startsWith("grpc+");
}

/** A card's gRPC target as a recorded endpoint of `version` (see grpcOriginOf in peer-endpoint.ts). */
export function grpcEndpointOf(target: string, cardUrl: string, version: PeerVersion = UNNAMED_A2A_VERSION): string {
  return formatPeerEndpoint({ binding: "grpc", version, url: grpcOriginOf(target, cardUrl) });
}

// ------------------------------------------------------------------------------------------ errors

/**
 * gRPC statuses that may clear up on their own: the same call may succeed later. Every other status is an
 * answer (NOT_FOUND, INVALID_ARGUMENT, FAILED_PRECONDITION, UNIMPLEMENTED, …), as a JSON-RPC error other than
 * -32603 is for the JSON-RPC client.
 */
const RETRYABLE_CODES: ReadonlySet<Code> = new Set([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.ResourceExhausted,
  Code.Internal,
]);

/**
 * A failed gRPC call as a PeerCallError, with the retry decision the JSON-RPC client makes for the same trouble:
 * unreachable, timed out, overloaded or an internal error → retryable; any other status → final.
 */
export function grpcCallError(
  err: unknown,
  ctx: { method: string; where: string; timeoutMs: number; callerSignal?: AbortSignal | undefined },
): PeerCallError {
  if (err instanceof PeerCallError) return err;
  const { method, where } = ctx;
  if (ctx.callerSignal?.aborted) return new PeerCallError(`the call to ${where} was abandoned`, "aborted", false);
  if (!(err instanceof ConnectError)) {
    const code = errorCode(err);
    return new PeerCallError(`cannot reach ${where}${code ? ` (${code})` : ""}`, "connection", true);
  }
  const status = GRPC_STATUS_NAMES[err.code] ?? String(err.code);
  const said = err.rawMessage.slice(0, 200);
  // A system error under the status means the connection itself failed (refused, reset, TLS, DNS).
  const system = errorCode(err.cause);
  if (err.code === Code.DeadlineExceeded)
    return new PeerCallError(`${where} did not answer ${method} within ${ctx.timeoutMs} ms`, "timeout", true, err.code);
  if (isTlsFailureCode(system)) {
    return new PeerCallError(`TLS error talking to ${where} (${system})`, "connection", true, err.code);
  }
  if (err.code === Code.Unavailable && system)
    return new PeerCallError(`cannot reach ${where} (${system})`, "connection", true, err.code);
  if (err.code === Code.ResourceExhausted && /configured (read|write)MaxBytes/.test(err.rawMessage)) {
    // Our own cap, not the peer's quota: retrying would get the same answer.
    return new PeerCallError(
      `${where} answered ${method} with more than ${DEFAULT_MAX_PEER_RESPONSE_BYTES} bytes (or the message is too large to send)`,
      "protocol",
      false,
      err.code,
    );
  }
  if (err.code === Code.Unauthenticated || err.code === Code.PermissionDenied) {
    const why =
      err.code === Code.Unauthenticated
        ? "the credentials for this peer are missing or wrong"
        : "the credentials for this peer are not allowed to do this";
    return new PeerCallError(
      `the remote agent answered ${method} with gRPC status ${status} (${why})${said ? `: ${said}` : ""}`,
      "unauthorized",
      false,
      err.code,
    );
  }
  return new PeerCallError(
    `the remote agent answered ${method} with gRPC status ${status}${said ? ` (${said})` : ""}`,
    "rpc",
    RETRYABLE_CODES.has(err.code),
    err.code,
  );
}

// ------------------------------------------------------------------------------------------ transport

export interface GrpcPeerTransportOptions {
  policy: EgressPolicy;
  /** The client half of each version (the registry's `peerVersions()`): service, requests, readers. */
  versions: PeerVersions;
  requestTimeoutMs: number;
  /** A held SubscribeToTask stream silent this long is dropped (the runner re-attaches); A2A_PEER_STREAM_IDLE_MS. */
  streamIdleMs?: number;
  resolve?: Resolver;
  maxResponseBytes?: number;
  userAgent?: string;
  /** CA certificates trusted for peers' servers (A2A_PEERS_CA_FILE); a peer's mTLS `caFile` wins. */
  ca?: string;
  onTlsFailure?: (where: string, code: string) => void;
}

interface Session {
  manager: Http2SessionManager;
  /** One client per version over the session's connection. */
  clients: ReadonlyMap<PeerVersion, PeerGrpcClient>;
}

export function createGrpcPeerTransport(opts: GrpcPeerTransportOptions): PeerTransport {
  const resolve = opts.resolve ?? defaultResolver;
  const { versions } = opts;
  const readMaxBytes = opts.maxResponseBytes ?? DEFAULT_MAX_PEER_RESPONSE_BYTES;
  // One HTTP/2 session per origin + checked addresses: a connection is only reused for exactly what was checked.
  const sessions = new Map<string, Session>();
  let closed = false;

  function sessionFor(origin: URL, addresses: readonly ResolvedAddress[], tls: PeerClientTls | undefined): Session {
    // A peer's client certificate (mTLS) keys its sessions too: no other caller rides on its connection.
    const key = `${origin.origin}|${addresses.map((a) => a.address).join(",")}${tls ? `|tls:${tls.id}` : ""}`;
    const existing = sessions.get(key);
    if (existing) {
      sessions.delete(key);
      sessions.set(key, existing);
      return existing;
    }
    const hostname = origin.hostname.endsWith(".") ? origin.hostname.slice(0, -1) : origin.hostname;
    const isName = !hostname.startsWith("[") && !/^[0-9.]+$/.test(hostname);
    // node:http2 passes these to net.connect / tls.connect: the socket only ever dials a checked address.
    const nodeOptions = {
      lookup: pinnedLookup(addresses),
      ...(origin.protocol === "https:" && isName ? { servername: hostname } : {}),
      ...(tls ? { cert: tls.cert, key: tls.key.reveal() } : {}),
      ...((tls?.ca ?? opts.ca) !== undefined ? { ca: tls?.ca ?? opts.ca } : {}),
    };
    // The session manager is ours (createGrpcTransport would otherwise make one from the same nodeOptions) so
    // close() can end its connection.
    const manager = new Http2SessionManager(
      origin.origin,
      { idleConnectionTimeoutMs: IDLE_CONNECTION_MS },
      nodeOptions,
    );
    const transport = createGrpcTransport({
      baseUrl: origin.origin,
      sessionManager: manager,
      readMaxBytes,
      acceptCompression: [],
    });
    const session = { manager, clients: new Map(versions.map((v) => [v.version, v.grpc.client(transport)])) };
    sessions.set(key, session);
    for (const [oldKey] of sessions) {
      if (sessions.size <= MAX_SESSIONS) break;
      // Not aborted: a call may still be in flight on it. Idle sessions are unref'd and close when they idle out.
      sessions.delete(oldKey);
    }
    return session;
  }

  /** A connection that failed its TLS handshake is reported (logged once, counted) by whoever built the transport. */
  function reportTls(err: unknown, where: string): void {
    const code = errorCode(err instanceof ConnectError ? err.cause : err);
    if (isTlsFailureCode(code)) opts.onTlsFailure?.(where, code);
  }

  /** The checked, pinned session for a recorded endpoint, and the metadata every call carries. */
  async function open(recorded: string, options: PeerCallOptions | undefined) {
    if (closed) throw new PeerCallError("the peer gRPC client is closed", "aborted", false);
    if (!isGrpcEndpoint(recorded)) throw new PeerCallError("not a gRPC endpoint", "unsupported", false);
    const endpoint = parsePeerEndpoint(recorded);
    peerVersionIn(versions, endpoint.version);
    const checked = await checkPeerUrl(endpoint.url, opts.policy, resolve);
    return {
      endpoint,
      client: sessionFor(checked.url, checked.addresses, options?.tls).clients.get(endpoint.version)!,
      where: `grpc+${checked.url.protocol}//${checked.url.host}`,
      // traceparent of the active span (none when tracing is off), so the peer joins the caller's trace.
      headers: injectTraceHeaders({
        "user-agent": opts.userAgent ?? "openwop-a2a-host/a2a-invoke",
        ...lowerCased(options?.headers),
        "a2a-version": endpoint.version,
      }),
    };
  }

  async function call<T>(
    recorded: string,
    method: string,
    run: (client: PeerGrpcClient, options: PeerGrpcCallOptions, tenant: string | undefined) => Promise<T>,
    options: PeerCallOptions | undefined,
  ): Promise<T> {
    const { endpoint, client, where, headers } = await open(recorded, options);
    const signal = options?.signal;
    try {
      return await run(
        client,
        { timeoutMs: opts.requestTimeoutMs, ...(signal ? { signal } : {}), headers },
        endpoint.tenant,
      );
    } catch (err) {
      reportTls(err, where);
      throw grpcCallError(err, { method, where, timeoutMs: opts.requestTimeoutMs, callerSignal: signal });
    }
  }

  /**
   * The task's stream (1.0 `SubscribeToTask`), held open: the task first, then its updates, until the peer ends the
   * stream or it stays silent for the idle time (then it is cancelled and ends; the runner re-attaches). A version
   * without a gRPC stream here (0.3) ends at once.
   */
  async function* subscribe(
    recorded: string,
    taskId: string,
    options: PeerCallOptions | undefined,
  ): AsyncGenerator<PeerStreamEvent> {
    const { endpoint, client, where, headers } = await open(recorded, options);
    if (!client.subscribe) return;
    const idleMs = opts.streamIdleMs ?? DEFAULT_STREAM_IDLE_MS;
    const idle = new AbortController();
    const signal = options?.signal ? AbortSignal.any([options.signal, idle.signal]) : idle.signal;
    let timer = setTimeout(() => idle.abort(), idleMs);
    try {
      for await (const event of client.subscribe(taskId, endpoint.tenant, { signal, headers })) {
        clearTimeout(timer);
        timer = setTimeout(() => idle.abort(), idleMs);
        if (event) yield event;
      }
    } catch (err) {
      if (idle.signal.aborted && !options?.signal?.aborted) return; // silent too long: end, to be re-attached
      reportTls(err, where);
      throw grpcCallError(err, { method: "SubscribeToTask", where, timeoutMs: idleMs, callerSignal: options?.signal });
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    // Non-blocking, as over JSON-RPC: the peer answers with its task at once; we record its id, then poll.
    send: (endpoint, message, options) =>
      call(endpoint, "SendMessage", (c, o, tenant) => c.send(message, tenant, options?.push, o), options),
    getTask: (endpoint, taskId, options) =>
      call(endpoint, "GetTask", (c, o, tenant) => c.getTask(taskId, tenant, o), options),
    cancelTask: (endpoint, taskId, options) =>
      call(endpoint, "CancelTask", (c, o, tenant) => c.cancelTask(taskId, tenant, o), options),
    subscribe: (recorded, taskId, options) => subscribe(recorded, taskId, options),

    async close(): Promise<void> {
      closed = true;
      for (const { manager } of sessions.values()) manager.abort();
      sessions.clear();
    },
  };
}

/** gRPC metadata keys are lower case. */
function lowerCased(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
}
