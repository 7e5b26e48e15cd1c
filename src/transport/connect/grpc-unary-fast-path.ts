import type { Http2ServerRequest, Http2ServerResponse, IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http2";
import { create, type DescMethod, type DescService, type Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  createServiceImplSpec,
  type ConnectRouter,
  type HandlerContext,
  type MethodImpl,
  type MethodImplSpec,
  type ServiceImpl,
} from "@connectrpc/connect";
import { compressionNegotiate, type Compression, type UniversalHandlerOptions } from "@connectrpc/connect/protocol";
import { parseTimeout } from "@connectrpc/connect/protocol-grpc";
import { CALLER } from "../../a2a/connect-caller.js";
import type { A2AVersion } from "../../domain/a2a-version.js";
import { DEFAULT_A2A_VERSION, versionOfRpcService } from "../../a2a/versions.js";
import type { Authenticator } from "../../auth/authenticator.js";
import { verifiedPeerCertificate } from "../peer-certificate.js";
import type { ReportError } from "../errors/wire-error.js";
import type { HttpRequest, HttpResponse } from "../http-io.js";
import { admitRpcCaller, rpcErrorOf } from "./rpc-call-guard.js";
import { clampGrpcTimeout, untilDeadline } from "./rpc-deadline.js";
import { setGrpcTrailerStatus } from "./grpc-message.js";
import { COMPRESSED, frame, GONE, readUnaryRequest, serialize } from "./grpc-unary-frames.js";
import { resetUnreadRequestAfterTrailers } from "./rpc-request-check.js";

/**
 * Plain unary gRPC calls (h2c POST, `application/grpc[+proto]`, no request compression), answered without
 * connect-node's per-call machinery: its async-iterable pipeline (a generator per stage), three `Headers`
 * objects, linked AbortControllers, a DOMException per finished call, and our body check decoding the message
 * a second time. That cost made a gRPC SendMessage two to three times as dear in CPU as the same call over
 * JSON-RPC. What goes over the wire is what connect with our interceptor sends, in the same order of checks:
 * invalid `grpc-timeout`; the body (rpc-request-check.ts, then connect's frame rules: RESOURCE_EXHAUSTED from
 * the frame header, missing, truncated or extra frames); `a2a-version`, the caller (rpc-call-guard.ts); the
 * method, cut short at the deadline (rpc-deadline.ts). Headers, then the message, then the status in trailers
 * (connect never answers trailers-only), through `res.writeHead`/`res.addTrailers` so request-observer.ts sees
 * the status. Everything else (gRPC-Web, Connect, `+json`, compressed requests, streams) stays with connect.
 */
export class GrpcUnaryFastPath {
  private readonly unary = new Map<string, { spec: UnarySpec; version: A2AVersion }>();
  constructor(private readonly options: FastPathOptions) {}

  /** The router for `bindings.connect`: every registration goes on to connect; plain service impls are also kept here. */
  recording(router: ConnectRouter): ConnectRouter {
    return new RecordingRouter(router, (path, spec) =>
      spec
        ? this.unary.set(path, {
            spec,
            version: versionOfRpcService(spec.method.parent.typeName) ?? DEFAULT_A2A_VERSION,
          })
        : this.unary.delete(path),
    );
  }

  /** Answers the call and returns true when it is a plain unary gRPC call; false leaves it to connect. */
  handle(req: HttpRequest, res: HttpResponse, path: string): boolean {
    if (!("stream" in req) || req.method !== "POST") return false;
    const type = req.headers["content-type"];
    const encoding = req.headers["grpc-encoding"];
    if (
      (type !== "application/grpc" && type !== "application/grpc+proto") ||
      (encoding !== undefined && encoding !== "identity")
    )
      return false;
    const unary = this.unary.get(path);
    if (!unary) return false;
    void this.call(unary.spec, unary.version, req, res as Http2ServerResponse);
    return true;
  }

  private async call(
    spec: UnarySpec,
    version: A2AVersion,
    req: Http2ServerRequest,
    res: Http2ServerResponse,
  ): Promise<void> {
    const { authenticator, report, maxBodyBytes, shutdownSignal, acceptCompression } = this.options;
    const { method } = spec;
    const compression = compressionNegotiate(
      acceptCompression,
      null,
      header(req.headers, "grpc-accept-encoding"),
      "grpc-accept-encoding",
    ).response;
    const timeout = parseTimeout(clampGrpcTimeout(header(req.headers, "grpc-timeout")), Number.MAX_SAFE_INTEGER);
    const ctx = new UnaryContext(method, req, timeout.timeoutMs, shutdownSignal, compression?.name);
    let body: Buffer | undefined;
    let failure: ConnectError | undefined;
    try {
      if (timeout.error) throw timeout.error;
      const input = await readUnaryRequest(req, method.input, maxBodyBytes);
      let output: Message;
      try {
        const caller = admitRpcCaller(
          authenticator,
          (name) => header(req.headers, name),
          verifiedPeerCertificate(req.socket),
          this.options.served,
        );
        ctx.values.set(CALLER, caller instanceof Promise ? await caller : caller);
        output = await untilDeadline(invoke(spec, input, ctx), ctx.signal);
      } catch (err) {
        throw rpcErrorOf(version, report, method.name, err);
      }
      const bytes = serialize(method.output, output);
      body =
        compression && bytes.byteLength >= COMPRESS_MIN_BYTES
          ? frame(COMPRESSED, await compression.compress(bytes))
          : frame(0, bytes);
    } catch (err) {
      if (err === GONE) return ctx.end(undefined);
      failure =
        err instanceof ConnectError
          ? err
          : new ConnectError("internal error", Code.Internal, undefined, undefined, err);
    }
    ctx.end(failure ?? CALL_ENDED);
    if (res.stream.destroyed || res.stream.closed) return; // the caller is gone: nobody to answer
    try {
      // Answered before the body was read to its end (deadline header, oversized frame): reset the request side.
      if (!req.complete) resetUnreadRequestAfterTrailers(req);
      res.writeHead(200, ctx.nodeHeader());
      res.addTrailers(failure ? nodeHeaders(setGrpcTrailerStatus(ctx.responseTrailer, failure)) : ctx.nodeTrailer());
      if (body) res.end(body);
      else res.end();
    } catch (err) {
      if (!res.stream.destroyed) report(err, { rpc: method.name });
    }
  }
}

export interface FastPathOptions {
  authenticator: Authenticator;
  /** The versions the app serves (`a2a-version` is negotiated against them). */
  served: readonly A2AVersion[];
  report: ReportError;
  /** Per-message limit, as connect's `readMaxBytes`. */
  maxBodyBytes: number;
  shutdownSignal: AbortSignal;
  /** The router's `acceptCompression`: response compression is negotiated from `grpc-accept-encoding` as connect does. */
  acceptCompression: Compression[];
}

type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;
/** connect's default `compressMinBytes`: smaller responses go uncompressed. */
const COMPRESS_MIN_BYTES = 1024;
/** The reason a call's signal aborts with once answered (one shared value: connect makes a DOMException per call). */
const CALL_ENDED = new ConnectError("the call has ended", Code.Canceled);

/** connect's router, with each plain `service()` registration also reported (other registrations of a path unreport it). */
class RecordingRouter implements ConnectRouter {
  constructor(
    private readonly router: ConnectRouter,
    private readonly record: (path: string, spec?: UnarySpec) => void,
  ) {}
  get handlers() {
    return this.router.handlers;
  }
  service<T extends DescService>(
    service: T,
    impl: Partial<ServiceImpl<T>>,
    options?: Partial<UniversalHandlerOptions>,
  ): this {
    this.router.service(service, impl, options);
    for (const spec of Object.values(createServiceImplSpec(service, impl).methods)) {
      this.record(
        `/${service.typeName}/${spec.method.name}`,
        spec.kind === "unary" && options === undefined ? spec : undefined,
      );
    }
    return this;
  }
  rpc<M extends DescMethod>(method: M, impl: MethodImpl<M>, options?: Partial<UniversalHandlerOptions>): this {
    this.router.rpc(method, impl, options);
    this.record(`/${method.parent.typeName}/${method.name}`);
    return this;
  }
}

/** A complete HandlerContext; its `Headers` are made only when a method asks for them. */
class UnaryContext implements HandlerContext {
  readonly service: DescService;
  readonly protocolName = "grpc";
  readonly requestMethod = "POST";
  readonly values = createContextValues();
  readonly signal: AbortSignal;
  readonly timeoutMs: () => number | undefined;
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout | undefined;
  private request: Headers | undefined;
  private header: Headers | undefined;
  private trailer: Headers | undefined;

  constructor(
    readonly method: DescMethod,
    private readonly req: Http2ServerRequest,
    timeoutMs: number | undefined,
    private readonly shutdown: AbortSignal,
    private readonly encoding: string | undefined,
  ) {
    this.service = method.parent;
    this.signal = this.controller.signal;
    const deadline = timeoutMs === undefined ? undefined : Math.floor(Date.now() + timeoutMs);
    this.timeoutMs = () => (deadline === undefined ? undefined : deadline - Date.now());
    if (timeoutMs !== undefined && timeoutMs <= 0) this.onDeadline();
    else if (timeoutMs !== undefined) this.timer = setTimeout(this.onDeadline, timeoutMs);
    if (shutdown.aborted) this.abort(shutdown.reason);
    else shutdown.addEventListener("abort", this.onShutdown);
    req.once("close", this.onClose);
  }
  private readonly onDeadline = () => this.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
  private readonly onShutdown = () => this.abort(this.shutdown.reason);
  private readonly onClose = () => this.abort(resetError(this.req.stream.rstCode));
  private abort(reason: unknown): void {
    if (!this.signal.aborted) this.controller.abort(reason);
  }
  /** The call is over: timers and listeners go, and the signal aborts (as connect's does) for any work still running. */
  end(reason: unknown): void {
    clearTimeout(this.timer);
    this.shutdown.removeEventListener("abort", this.onShutdown);
    this.req.off("close", this.onClose);
    this.abort(reason);
  }
  get url(): string {
    return new URL(
      this.req.url,
      `${"encrypted" in this.req.socket && this.req.socket.encrypted ? "https" : "http"}://${this.req.authority}`,
    ).toString();
  }
  get requestHeader(): Headers {
    if (!this.request) {
      this.request = new Headers();
      for (const [name, value] of Object.entries(this.req.headers)) {
        if (name.startsWith(":") || value === undefined) continue;
        for (const one of Array.isArray(value) ? value : [String(value)]) this.request.append(name, one);
      }
    }
    return this.request;
  }
  get responseHeader(): Headers {
    return (this.header ??= new Headers(this.nodeHeader() as Record<string, string>));
  }
  get responseTrailer(): Headers {
    return (this.trailer ??= new Headers({ "grpc-status": "0" }));
  }
  /** The response headers as connect sends them: `application/grpc+proto`, and the negotiated response encoding. */
  nodeHeader(): OutgoingHttpHeaders {
    if (this.header) return nodeHeaders(this.header);
    return this.encoding
      ? { "content-type": "application/grpc+proto", "grpc-encoding": this.encoding }
      : { "content-type": "application/grpc+proto" };
  }
  nodeTrailer(): OutgoingHttpHeaders {
    return this.trailer ? nodeHeaders(this.trailer) : { "grpc-status": "0" };
  }
}

async function invoke(spec: UnarySpec, input: Message, ctx: HandlerContext): Promise<Message> {
  return create(spec.method.output, await spec.impl(input, ctx));
}

/** A request header as `Headers.get` gives it (repeated values joined). */
function header(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name.toLowerCase()];
  return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
}

function nodeHeaders(headers: Headers): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  headers.forEach((value, name) => (out[name] = value));
  return out;
}

/** The signal's reason when the caller resets the stream (RFC 9113 error codes, as connect-node maps them). */
const H2_RESETS: Record<number, [string, Code]> = {
  1: ["PROTOCOL_ERROR", Code.Internal],
  2: ["INTERNAL_ERROR", Code.Internal],
  3: ["FLOW_CONTROL_ERROR", Code.Internal],
  4: ["SETTINGS_TIMEOUT", Code.Internal],
  6: ["FRAME_SIZE_ERROR", Code.Internal],
  7: ["REFUSED_STREAM", Code.Unavailable],
  8: ["CANCEL", Code.Canceled],
  9: ["COMPRESSION_ERROR", Code.Internal],
  10: ["CONNECT_ERROR", Code.Internal],
  11: ["ENHANCE_YOUR_CALM", Code.ResourceExhausted],
  12: ["INADEQUATE_SECURITY", Code.PermissionDenied],
  13: ["HTTP_1_1_REQUIRED", Code.PermissionDenied],
};
function resetError(code: number): ConnectError | undefined {
  const known = H2_RESETS[code];
  return (
    known && new ConnectError(`http/2 stream closed with error code ${known[0]} (0x${code.toString(16)})`, known[1])
  );
}
