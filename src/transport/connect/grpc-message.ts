import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import type { ConnectError } from "@connectrpc/connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";

/**
 * `grpc-message` as the gRPC spec (PROTOCOL-HTTP2.md, "Responses") says: the message's UTF-8 bytes, with every
 * byte outside printable ASCII (0x20–0x7E) and `%` itself written as %XX. connect percent-encodes with
 * encodeURIComponent instead, which also encodes spaces and reserved characters (":", "/", ","…); clients that
 * decode as the spec says (grpc-js uses decodeURI) then show "Task not found%3A nope-x".
 */
export function encodeGrpcMessage(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** connect's `setTrailerStatus`, with `grpc-message` encoded as the spec says. */
export function setGrpcTrailerStatus(target: Headers, error: ConnectError | undefined): Headers {
  setTrailerStatus(target, error);
  if (error) target.set("grpc-message", encodeGrpcMessage(error.rawMessage));
  return target;
}

/** A `grpc-message` connect wrote (encodeURIComponent), re-encoded as the spec says; lossless. */
function reencoded(value: string): string {
  try {
    return encodeGrpcMessage(decodeURIComponent(value));
  } catch {
    return value; // not connect's encoding: leave it as it is
  }
}

/**
 * For a gRPC response connect-node writes (streams, and unary calls off the fast path): its trailers pass
 * through `reencoded` on their way out. gRPC-Web carries its trailers in the body, where clients decode either form.
 */
export function encodeGrpcMessagesAsSpec(res: ServerResponse | Http2ServerResponse): void {
  const addTrailers = res.addTrailers.bind(res) as (headers: Record<string, string | string[]>) => void;
  res.addTrailers = ((headers: Record<string, string | string[]>) => {
    const message = headers["grpc-message"];
    addTrailers(typeof message === "string" ? { ...headers, "grpc-message": reencoded(message) } : headers);
  }) as typeof res.addTrailers;
}
