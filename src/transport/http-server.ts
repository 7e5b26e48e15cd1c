import {
  createServer as createHttp1Server,
  type IncomingMessage,
  type Server as Http1Server,
  type ServerResponse,
} from "node:http";
import {
  createServer as createHttp2Server,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from "node:http2";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { createServer as createTlsServer, type SecureContextOptions, type Server as TlsServer } from "node:tls";
import type { Logger } from "../observability/logger.js";
import { everyLabelSet, labelSets, startAtZero, type Metrics } from "../observability/metrics.js";
import type { ConnectionSettings } from "./connection-settings.js";

type Handler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;

const H2_PREFACE_START = Buffer.from("PRI");

/** Why the port refused a new connection (a metric label). */
export type ConnectionRefusal = "max-connections" | "max-connections-per-client";
/** Which deadline closed a connection: no complete first request head, no h2c SETTINGS, or idle keep-alive. */
export type ConnectionTimeout = "headers" | "http2-settings" | "idle";
export type ConnectionProtocol = "unknown" | "http1" | "h2c";

/** What the port reports about connections it closes itself (metrics); every hook optional. */
export interface ConnectionEvents {
  refused?(reason: ConnectionRefusal): void;
  timedOut?(reason: ConnectionTimeout, protocol: ConnectionProtocol): void;
  /** accept(2) failed (EMFILE, ENFILE, …): the server keeps listening. */
  acceptError?(error: Error): void;
}

/** TLS on the port: the server's certificate and key (and the client CA), and whether client certificates are asked for / required. */
export interface TlsServing {
  context: SecureContextOptions;
  requestCert: boolean;
  rejectUnauthorized: boolean;
}

interface Connection {
  readonly socket: Socket;
  /** The remote address the per-client cap counts. */
  readonly client: string;
  readonly openedAt: number;
  protocol: ConnectionProtocol;
  /** The first request head (HTTP/1.1) or the client's SETTINGS (h2c) arrived. */
  ready: boolean;
  /** The header / SETTINGS deadline, until `ready`. */
  handshake: NodeJS.Timeout | undefined;
  /** h2c: open streams, and the idle timer that runs while there are none. */
  streams: number;
  idle: NodeJS.Timeout | undefined;
  session: ServerHttp2Session | undefined;
}

/** "::ffff:10.0.0.1" and "10.0.0.1" are one client. */
function clientOf(socket: Socket): string {
  const address = socket.remoteAddress ?? "unknown";
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}

/**
 * One TCP port for HTTP/1.1 and cleartext HTTP/2 (h2c with prior knowledge, which gRPC clients use). The
 * first bytes of each connection tell them apart: every HTTP/2 connection opens with "PRI * HTTP/2.0".
 *
 * Connections are bounded (ConnectionSettings): one that has not completed its first request head (or, h2c,
 * sent its SETTINGS) in time is closed, as is an HTTP/1.1 keep-alive connection or an HTTP/2 session idle
 * between requests; a request in flight (a stream open for minutes, a slow upload) is never cut by those.
 * New connections over the total or per-client cap are closed at once.
 *
 * With `tls`, the port speaks TLS (ALPN `h2` and `http/1.1`) and the same routing runs on the decrypted
 * stream; the TLS handshake is bounded by the headers timeout. `setSecureContext` swaps the certificate,
 * key and client CA for new connections (rotation); open connections keep theirs.
 */
export class DualProtocolServer {
  private readonly http1: Http1Server;
  private readonly http2: Http2Server;
  private readonly net: NetServer | TlsServer;
  private readonly connections = new Map<Socket, Connection>();
  private readonly perClient = new Map<string, number>();
  private readonly sessions = new Set<ServerHttp2Session>();
  /** The connection being handed to the HTTP/2 server: its "session" event comes synchronously. */
  private handingOff: Connection | undefined;

  constructor(
    handler: Handler,
    private readonly limits: ConnectionSettings,
    private readonly events: ConnectionEvents = {},
    tls?: TlsServing,
  ) {
    this.http1 = createHttp1Server({
      // Node closes an idle keep-alive connection 1 s after the advertised `Keep-Alive: timeout=`.
      keepAliveTimeout: limits.idleTimeoutMs,
      // Later requests on a keep-alive connection (the first one has its own timer below), and whole requests.
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1_000, Math.max(10, Math.floor(limits.headersTimeoutMs / 4))),
    });
    this.http2 = createHttp2Server({ settings: { enableConnectProtocol: false } });
    this.net = tls
      ? createTlsServer(
          {
            ...tls.context,
            ALPNProtocols: ["h2", "http/1.1"],
            requestCert: tls.requestCert,
            rejectUnauthorized: tls.rejectUnauthorized,
            handshakeTimeout: limits.headersTimeoutMs,
          },
          (socket) => this.route(socket),
        )
      : createNetServer((socket) => this.route(socket));
    if (limits.maxConnections > 0) {
      // Over the cap, Node closes the accepted descriptor before any JavaScript object exists for it.
      this.net.maxConnections = limits.maxConnections;
      this.net.on("drop", () => this.events.refused?.("max-connections"));
    }
    this.http1.on("request", (req: IncomingMessage) => {
      const conn = this.connections.get(req.socket);
      if (conn && !conn.ready) this.handshakeDone(conn);
    });
    this.http1.on("request", handler);
    this.http2.on("request", handler);
    this.http2.on("session", (session) => {
      this.sessions.add(session);
      session.on("close", () => this.sessions.delete(session));
      if (this.handingOff) this.watchSession(this.handingOff, session);
    });
  }

  /** New TLS connections use these certificate, key and client CA files' contents (a no-op without TLS). */
  setSecureContext(context: SecureContextOptions): void {
    if ("setSecureContext" in this.net) this.net.setSecureContext(context);
  }

  /** Connections open on the port (including ones not yet past their first request head). */
  get openConnections(): number {
    return this.connections.size;
  }

  listen(port: number, host: string): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.net.once("error", reject);
      this.net.listen(port, host, () => {
        this.net.off("error", reject);
        // After listening, an error is a failed accept (out of descriptors): reported, never fatal.
        this.net.on("error", (err) => this.events.acceptError?.(err));
        // The HTTP/1.1 server never binds a port itself; "listening" starts its connection tracking,
        // which closeIdleConnections() and the headers/request timeouts need.
        this.http1.emit("listening");
        resolve(this.net.address() as AddressInfo);
      });
    });
  }

  /** Stops accepting connections, lets in-flight requests finish for up to `graceMs`, then cuts the rest. */
  async close(graceMs: number): Promise<void> {
    const closed = new Promise<void>((resolve) => this.net.close(() => resolve()));
    // Connections that never completed a first request have nothing in flight.
    for (const conn of this.connections.values()) if (!conn.ready) conn.socket.destroy();
    this.http1.closeIdleConnections();
    for (const session of this.sessions) session.close();
    const deadline = setTimeout(() => {
      for (const socket of this.connections.keys()) socket.destroy();
    }, graceMs);
    const drain = setInterval(() => this.http1.closeIdleConnections(), 100);
    await closed;
    clearTimeout(deadline);
    clearInterval(drain);
  }

  private route(socket: Socket): void {
    const client = clientOf(socket);
    const fromClient = this.perClient.get(client) ?? 0;
    if (this.limits.maxConnectionsPerClient > 0 && fromClient >= this.limits.maxConnectionsPerClient) {
      socket.destroy();
      this.events.refused?.("max-connections-per-client");
      return;
    }
    this.perClient.set(client, fromClient + 1);
    const conn: Connection = {
      socket,
      client,
      openedAt: Date.now(),
      protocol: "unknown",
      ready: false,
      handshake: undefined,
      streams: 0,
      idle: undefined,
      session: undefined,
    };
    this.connections.set(socket, conn);
    socket.on("close", () => this.forget(conn));
    socket.on("error", () => socket.destroy());
    this.deadline(conn, "headers", this.limits.headersTimeoutMs);
    let head = Buffer.alloc(0);
    const onReadable = (): void => {
      const chunk = socket.read() as Buffer | null;
      if (chunk === null) return;
      head = Buffer.concat([head, chunk]);
      if (head.length < H2_PREFACE_START.length && !socket.readableEnded) return;
      socket.off("readable", onReadable);
      socket.unshift(head);
      if (head.subarray(0, H2_PREFACE_START.length).equals(H2_PREFACE_START)) {
        conn.protocol = "h2c";
        // The preface and SETTINGS come in one packet from every client: a shorter deadline, from accept.
        this.deadline(conn, "http2-settings", this.limits.http2SettingsTimeoutMs);
        this.handingOff = conn;
        try {
          this.http2.emit("connection", socket);
        } finally {
          this.handingOff = undefined;
        }
      } else {
        conn.protocol = "http1";
        // Node's keep-alive wait is a socket timeout (the server's own `timeout` is 0); Node's listener, added
        // after this one, closes the idle connection, unless a request's own timeout handler keeps it.
        socket.on("timeout", () => process.nextTick(() => socket.destroyed && this.events.timedOut?.("idle", "http1")));
        this.http1.emit("connection", socket);
      }
    };
    socket.on("readable", onReadable);
  }

  /** (Re)arms the connection's handshake deadline, `ms` after it was accepted. */
  private deadline(conn: Connection, reason: ConnectionTimeout, ms: number): void {
    clearTimeout(conn.handshake);
    conn.handshake = setTimeout(
      () => {
        this.events.timedOut?.(reason, conn.protocol);
        conn.socket.destroy();
      },
      Math.max(0, conn.openedAt + ms - Date.now()),
    ).unref();
  }

  private handshakeDone(conn: Connection): void {
    conn.ready = true;
    clearTimeout(conn.handshake);
    conn.handshake = undefined;
  }

  /** h2c: the handshake ends with the client's SETTINGS; the session is idle while it has no open stream. */
  private watchSession(conn: Connection, session: ServerHttp2Session): void {
    conn.session = session;
    session.once("remoteSettings", () => {
      this.handshakeDone(conn);
      this.armIdle(conn);
    });
    session.on("stream", (stream) => {
      conn.streams++;
      clearTimeout(conn.idle);
      stream.once("close", () => {
        conn.streams--;
        this.armIdle(conn);
      });
    });
  }

  private armIdle(conn: Connection): void {
    const session = conn.session;
    if (!session || !conn.ready || conn.streams > 0 || session.closed || session.destroyed) return;
    clearTimeout(conn.idle);
    conn.idle = setTimeout(() => {
      if (conn.streams > 0) return;
      this.events.timedOut?.("idle", "h2c");
      // GOAWAY, then the session (and the socket) ends: nothing is open on it.
      session.close();
    }, this.limits.idleTimeoutMs).unref();
  }

  private forget(conn: Connection): void {
    if (this.connections.get(conn.socket) !== conn) return;
    this.connections.delete(conn.socket);
    clearTimeout(conn.handshake);
    clearTimeout(conn.idle);
    const left = (this.perClient.get(conn.client) ?? 1) - 1;
    if (left > 0) this.perClient.set(conn.client, left);
    else this.perClient.delete(conn.client);
  }
}

/**
 * The connection events as metrics (`openwop_connections_refused_total{reason}` and
 * `openwop_connections_timed_out_total{reason,protocol}`), every label set started at 0, and a warning per
 * failed accept.
 */
export function connectionMetrics(metrics: Metrics, logger: Logger): ConnectionEvents {
  // Records, so a new refusal, timeout or protocol must be started here too.
  const refusals = Object.keys({ "max-connections": true, "max-connections-per-client": true } satisfies Record<
    ConnectionRefusal,
    true
  >);
  const timeouts = Object.keys({ headers: true, "http2-settings": true, idle: true } satisfies Record<
    ConnectionTimeout,
    true
  >);
  const protocols = Object.keys({ unknown: true, http1: true, h2c: true } satisfies Record<ConnectionProtocol, true>);
  startAtZero(metrics.connectionsRefused, everyLabelSet({ reason: refusals }));
  startAtZero(metrics.connectionsTimedOut, everyLabelSet({ reason: timeouts, protocol: protocols }));
  const refusedLabels = labelSets(["reason"]);
  const timeoutLabels = labelSets(["reason", "protocol"]);
  return {
    refused: (reason) => metrics.connectionsRefused.add(1, refusedLabels(reason)),
    timedOut: (reason, protocol) => metrics.connectionsTimedOut.add(1, timeoutLabels(reason, protocol)),
    acceptError: (err) =>
      logger.warn({ err }, "accepting a connection failed (out of file descriptors?); still listening"),
  };
}
