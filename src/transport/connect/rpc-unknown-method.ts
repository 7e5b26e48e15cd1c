import type { ConnectError } from "@connectrpc/connect";
import { endStreamFlag, endStreamToJson, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import type { ServerResponse } from "node:http";
import type { A2AVersion } from "../../domain/a2a-version.js";
import { DEFAULT_A2A_VERSION } from "../../a2a/versions.js";
import { DomainError } from "../../domain/errors.js";
import { connectErrorOf } from "../errors/a2a-error-exits.js";
import type { HttpRequest, HttpResponse } from "../http-io.js";
import { settleUnreadBody } from "../unread-request-body.js";
import { setGrpcTrailerStatus } from "./grpc-message.js";

/** The gRPC, gRPC-Web and Connect streaming media types: these requests are RPC calls whatever their path. */
const RPC_MEDIA_TYPE = /^application\/(grpc|grpc-web|grpc-web-text|connect)(\+[\w.-]+)?$/;
/** A Connect unary call (`POST /pkg.Service/Method`, JSON or binary): no HTTP route has this shape. */
const RPC_PATH = /^\/[A-Za-z_]\w*(\.[A-Za-z_]\w*)+\/[A-Za-z_]\w*$/;

function mediaType(req: HttpRequest): string {
  return String(req.headers["content-type"] ?? "")
    .split(";")[0]!
    .trim()
    .toLowerCase();
}

/**
 * Whether a request no registered service takes is still an RPC call, to be answered UNIMPLEMENTED in its
 * own protocol: any gRPC, gRPC-Web or Connect streaming request, and a Connect unary POST to a
 * `/package.Service/Method` path.
 */
export function isRpcRequest(req: HttpRequest): boolean {
  const type = mediaType(req);
  if (RPC_MEDIA_TYPE.test(type)) return true;
  const path = (req.url ?? "").split("?", 1)[0]!;
  return req.method === "POST" && (type === "application/json" || type === "application/proto") && RPC_PATH.test(path);
}

/**
 * An unknown service or method, answered as its protocol says (the status from the one error table's
 * `method-not-found` row: UNIMPLEMENTED): gRPC a trailers-only response with `grpc-status` 12, gRPC-Web a
 * trailer frame, Connect streaming an end-stream message, Connect unary HTTP 404 with a Connect error body
 * (the status Connect clients read as `unimplemented` for an unknown path; connect-go's mux answers 404 too).
 */
export function answerUnknownMethod(
  req: HttpRequest,
  res: HttpResponse,
  version: A2AVersion = DEFAULT_A2A_VERSION,
): void {
  const path = (req.url ?? "").split("?", 1)[0]!;
  const error: ConnectError = connectErrorOf(
    version,
    new DomainError("method-not-found", `unknown method: this server has no rpc ${JSON.stringify(path.slice(0, 200))}`),
  );
  const type = mediaType(req);
  const out = res as ServerResponse;
  settleUnreadBody(req, res); // nothing reads the body of an unknown method
  if (/^application\/grpc-web/.test(type)) {
    const trailer = trailerSerialize(setGrpcTrailerStatus(new Headers(), error));
    const frame = Buffer.alloc(5 + trailer.byteLength);
    frame[0] = trailerFlag;
    frame.writeUInt32BE(trailer.byteLength, 1);
    Buffer.from(trailer).copy(frame, 5);
    const text = type.startsWith("application/grpc-web-text");
    const body = text ? frame.toString("base64") : frame;
    out.writeHead(200, {
      "content-type": text ? "application/grpc-web-text+proto" : "application/grpc-web+proto",
      "content-length": Buffer.byteLength(body),
    });
    out.end(body);
  } else if (/^application\/grpc/.test(type)) {
    // Trailers-only: the status travels in the one HEADERS frame that ends the stream.
    const headers: Record<string, string> = { "content-type": "application/grpc" };
    setGrpcTrailerStatus(new Headers(), error).forEach((value, key) => (headers[key] = value));
    out.writeHead(200, headers);
    out.end();
  } else if (type.startsWith("application/connect+")) {
    const json = Buffer.from(JSON.stringify(endStreamToJson(new Headers(), error, undefined)));
    const frame = Buffer.alloc(5 + json.length);
    frame[0] = endStreamFlag;
    frame.writeUInt32BE(json.length, 1);
    json.copy(frame, 5);
    out.writeHead(200, { "content-type": type, "content-length": frame.length });
    out.end(frame);
  } else {
    const body = Buffer.from(errorToJsonBytes(error, undefined));
    out.writeHead(404, { "content-type": "application/json", "content-length": body.length });
    out.end(body);
  }
}
