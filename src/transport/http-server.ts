import { createServer as createHttp1Server, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Session } from "node:http2";
import { createServer as createNetServer, type AddressInfo, type Socket } from "node:net";

type Handler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;

const H2_PREFACE_START = Buffer.from("PRI");

/**
 * One TCP port for HTTP/1.1 and cleartext HTTP/2 (h2c with prior knowledge, which gRPC clients use). The
 * first bytes of each connection tell them apart: every HTTP/2 connection opens with "PRI * HTTP/2.0".
 */
export class DualProtocolServer {
  private readonly http1 = createHttp1Server({ keepAliveTimeout: 5_000 });
  private readonly http2 = createHttp2Server({ settings: { enableConnectProtocol: false } });
  private readonly net = createNetServer((socket) => this.route(socket));
  private readonly sockets = new Set<Socket>();
  private readonly sessions = new Set<ServerHttp2Session>();

  constructor(handler: Handler) {
    this.http1.on("request", handler);
    this.http2.on("request", handler);
    this.http2.on("session", (session) => {
      this.sessions.add(session);
      session.on("close", () => this.sessions.delete(session));
    });
  }

  listen(port: number, host: string): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.net.once("error", reject);
      this.net.listen(port, host, () => {
        this.net.off("error", reject);
        // The HTTP/1.1 server never binds a port itself; "listening" starts its connection tracking,
        // which closeIdleConnections() needs for a prompt shutdown.
        this.http1.emit("listening");
        resolve(this.net.address() as AddressInfo);
      });
    });
  }

  /** Stops accepting connections, lets in-flight requests finish for up to `graceMs`, then cuts the rest. */
  async close(graceMs: number): Promise<void> {
    const closed = new Promise<void>((resolve) => this.net.close(() => resolve()));
    this.http1.closeIdleConnections();
    for (const session of this.sessions) session.close();
    const deadline = setTimeout(() => {
      for (const socket of this.sockets) socket.destroy();
    }, graceMs);
    const drain = setInterval(() => this.http1.closeIdleConnections(), 100);
    await closed;
    clearTimeout(deadline);
    clearInterval(drain);
  }

  private route(socket: Socket): void {
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    let head = Buffer.alloc(0);
    const onReadable = (): void => {
      const chunk = socket.read() as Buffer | null;
      if (chunk === null) return;
      head = Buffer.concat([head, chunk]);
      if (head.length < H2_PREFACE_START.length && !socket.readableEnded) return;
      socket.off("readable", onReadable);
      socket.unshift(head);
      const target = head.subarray(0, H2_PREFACE_START.length).equals(H2_PREFACE_START) ? this.http2 : this.http1;
      target.emit("connection", socket);
    };
    socket.on("readable", onReadable);
  }
}
