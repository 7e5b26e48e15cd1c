import {
  Code,
  ConnectError,
  createConnectRouter,
  createContextKey,
  createContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import { CALLER } from "../../a2a/connect-caller.js";
import {
  versionModule,
  versionModules,
  versionOfRpcService,
  DEFAULT_A2A_VERSION,
  type BoundVersions,
} from "../../a2a/versions.js";
import { A2A_VERSION_HEADER, negotiateA2AVersion, type A2AVersion } from "../../domain/a2a-version.js";
import type { PeerCertificate } from "node:tls";
import type { Authenticator } from "../../auth/authenticator.js";
import { verifiedPeerCertificate } from "../peer-certificate.js";
import { RETRY_AFTER_SECONDS, retryAfterSecondsOf, type ReportError } from "../errors/wire-error.js";
import type { HttpRequest, HttpResponse } from "../http-io.js";
import { settleUnreadBody } from "../unread-request-body.js";
import { encodeGrpcMessagesAsSpec } from "./grpc-message.js";
import { checkedRequestBody, resetUnreadRequestAfterTrailers } from "./rpc-request-check.js";
import { clampDeadlineHeaders, untilDeadline } from "./rpc-deadline.js";
import { answerUnknownMethod } from "./rpc-unknown-method.js";
import { admitRpcCaller, rpcErrorOf } from "./rpc-call-guard.js";
import { GrpcUnaryFastPath } from "./grpc-unary-fast-path.js";

/** The connection's verified client certificate (mutual TLS), set per call from the Node request. */
const PEER_CERTIFICATE = createContextKey<PeerCertificate | undefined>(undefined, {
  description: "the verified TLS client certificate",
});
/**
 * Set by the interceptor when a call answers UNAVAILABLE or a limit's refusal, so that its HTTP answer carries
 * `Retry-After`: Connect's 503 / 429 and gRPC-Web's 200 alike (the status itself is in a trailer frame of the body
 * there, out of an HTTP client's sight). The interceptor sees no response headers on an error, hence a per-request
 * value.
 */
const RETRY_ANSWER = createContextKey<{ retryAfterSeconds?: number } | undefined>(undefined, {
  description: "the seconds the call's error answer asks the caller to wait",
});

/** Connect, gRPC and gRPC-Web paths of the registered services: `/a2a.v1.A2AService/*` (0.3), `/lf.a2a.v1.A2AService/*` (1.0). */
const A2A_RPC_PREFIXES = versionModules().map((m) => `/${m.connectService.typeName}/`);

export interface A2AConnectHandlerOptions {
  versions: BoundVersions;
  /** Who the caller is, from the request's credentials and client certificate (the same port as every other binding). */
  authenticator: Authenticator;
  report: ReportError;
  /** Per-message limit (the same as the HTTP body limit); larger messages answer RESOURCE_EXHAUSTED. */
  maxBodyBytes: number;
  /** MAX_INPUT_DEPTH: JSON messages nested deeper (plus their envelope) answer INVALID_ARGUMENT before they are decoded. */
  maxInputDepth: number;
  /** Aborts every handler's signal, so open streams end when the app shuts down. */
  shutdownSignal: AbortSignal;
}

/**
 * One Node handler for every registered A2A gRPC service on the shared port, over gRPC (h2c), Connect and
 * gRPC-Web: the service name routes each call to its version (wire facts §5.7). One interceptor runs
 * before any service method: it checks the `a2a-version` metadata (absent or empty = 0.3; a version we do
 * not serve answers FAILED_PRECONDITION VersionNotSupported), authenticates the caller (UNAUTHENTICATED),
 * and turns every error of the call, streamed or not, into the status and details of the service's
 * version. Request bytes are checked first (`rpc-request-check.ts`): malformed input is INVALID_ARGUMENT, and
 * unknown fields in Connect JSON are ignored, as binary protobuf does. Plain unary gRPC calls take a lean path
 * with the same answers (`grpc-unary-fast-path.ts`); the interceptor and that path share `rpc-call-guard.ts`.
 */
export function createA2AConnectHandler(
  options: A2AConnectHandlerOptions,
): (req: HttpRequest, res: HttpResponse) => void {
  const { authenticator, report } = options;
  const acceptCompression = [compressionGzip, compressionBrotli];
  const served = [...options.versions.keys()];
  // `fixed`: the version of a router that only one version's calls reach (a draft's, picked by its header).
  const guardOf =
    (fixed?: A2AVersion): Interceptor =>
    (next) =>
    async (req) => {
      const version = fixed ?? versionOfRpcService(req.service.typeName) ?? DEFAULT_A2A_VERSION;
      // The same checks and error mapping as the gRPC unary fast path (rpc-call-guard.ts).
      const fail = (err: unknown) => {
        const error = rpcErrorOf(version, report, req.method.name, err);
        const retryAfterSeconds =
          retryAfterSecondsOf(err) ?? (error.code === Code.Unavailable ? RETRY_AFTER_SECONDS : undefined);
        const answer = req.contextValues.get(RETRY_ANSWER);
        if (answer && retryAfterSeconds !== undefined) answer.retryAfterSeconds = retryAfterSeconds;
        return error;
      };
      try {
        const caller = admitRpcCaller(
          authenticator,
          (name) => req.header.get(name),
          req.contextValues.get(PEER_CERTIFICATE),
          served,
        );
        req.contextValues.set(CALLER, caller instanceof Promise ? await caller : caller);
        // A unary call answers DEADLINE_EXCEEDED at its deadline, whatever it still waits for (rpc-deadline.ts).
        const res = await untilDeadline(next(req), req.signal);
        if (!res.stream) return res;
        return { ...res, message: mapStreamErrors(res.message, fail) };
      } catch (err) {
        throw fail(err);
      }
    };
  const routerOf = (fixed?: A2AVersion) =>
    createConnectRouter({
      interceptors: [guardOf(fixed)],
      grpc: true,
      grpcWeb: true,
      connect: true,
      readMaxBytes: options.maxBodyBytes,
      shutdownSignal: options.shutdownSignal,
      // Strict: unknown fields are already dropped (and non-UTF-8 bodies refused) by the body check.
      jsonOptions: { ignoreUnknownFields: false },
      acceptCompression,
    });
  const router = routerOf();
  // Plain unary gRPC calls skip connect's per-call machinery (grpc-unary-fast-path.ts); it records the impls.
  const fastPath = new GrpcUnaryFastPath({
    authenticator,
    report,
    served,
    maxBodyBytes: options.maxBodyBytes,
    shutdownSignal: options.shutdownSignal,
    acceptCompression,
  });
  // A version sharing another's service (a draft: 1.1 over 1.0) gets its own router, which its `a2a-version` picks.
  const byHeader = new Map<A2AVersion, Map<string, UniversalHandlerOf<typeof router>>>();
  for (const [version, bindings] of options.versions) {
    if (!versionModule(version).sharesShapesWith) {
      bindings.connect(fastPath.recording(router));
      continue;
    }
    const own = routerOf(version);
    bindings.connect(own);
    byHeader.set(version, new Map(own.handlers.map((h) => [h.requestPath, h])));
  }
  const handlers = new Map(router.handlers.map((h) => [h.requestPath, h]));
  /** The handlers of the version a call's `a2a-version` names, when that version has a router of its own. */
  const pickedByHeader = (req: HttpRequest) => {
    if (byHeader.size === 0) return undefined;
    const raw = req.headers[A2A_VERSION_HEADER];
    try {
      return byHeader.get(negotiateA2AVersion(Array.isArray(raw) ? raw[0] : raw, served));
    } catch {
      return undefined; // refused by the guard, in the shape of the service's version
    }
  };
  // connectNodeAdapter's loop, with the request body checked first (rpc-request-check.ts).
  return (req, res) => {
    const path = req.url?.split("?", 2)[0] ?? "";
    const picked = pickedByHeader(req)?.get(path);
    const handler = picked ?? handlers.get(path);
    if (handler && !picked && fastPath.handle(req, res, path)) return;
    if (!handler) {
      // An unknown method of a known service, or an unknown service: UNIMPLEMENTED in the caller's protocol.
      answerUnknownMethod(
        req,
        res,
        versionOfRpcService(/^\/([^/]+)\//.exec(req.url ?? "")?.[1] ?? "") ?? DEFAULT_A2A_VERSION,
      );
      return;
    }
    resetUnreadRequestAfterTrailers(req);
    if (/^application\/grpc(?:\+|;|$)/.test(req.headers["content-type"] ?? "")) encodeGrpcMessagesAsSpec(res);
    const answer: { retryAfterSeconds?: number } = {};
    const values = createContextValues();
    values.set(RETRY_ANSWER, answer);
    values.set(PEER_CERTIFICATE, verifiedPeerCertificate(req.socket));
    const uReq = universalRequestFromNodeRequest(req, res, undefined, values);
    clampDeadlineHeaders(uReq.header);
    // A JSON body may come back shorter (unknown fields dropped), so its declared length no longer holds.
    if (uReq.header.get("content-type")?.includes("json")) uReq.header.delete("content-length");
    const body = checkedRequestBody(uReq.body as AsyncIterable<Uint8Array>, {
      contentType: uReq.header.get("content-type") ?? "",
      header: uReq.header,
      input: handler.method.input,
      maxBytes: options.maxBodyBytes,
      maxDepth: options.maxInputDepth,
    });
    handler({ ...uReq, body })
      .then((uRes) => {
        // The answer's headers are not written yet: the handler resolves once the first body bytes (here the
        // error's) are ready, so a failure before them has set the flag.
        if (answer.retryAfterSeconds !== undefined) uRes.header?.set("retry-after", String(answer.retryAfterSeconds));
        // Answered before the body's end (too large, refused from its headers): drain it or close the connection.
        if (!body.reading) settleUnreadBody(req, res);
        return universalResponseToNodeResponse(uRes, res);
      })
      .catch((err: unknown) => {
        if (ConnectError.from(err).code !== Code.Aborted) report(err, { rpc: handler.method.name });
      });
  };
}

async function* mapStreamErrors<T>(messages: AsyncIterable<T>, fail: (err: unknown) => Error): AsyncGenerator<T> {
  try {
    yield* messages;
  } catch (err) {
    throw fail(err);
  }
}

export function isA2ARpcPath(url: string | undefined): boolean {
  const path = url ?? "";
  return A2A_RPC_PREFIXES.some((prefix) => path.startsWith(prefix));
}

type UniversalHandlerOf<R extends { handlers: unknown[] }> = R["handlers"][number];
