import { fromBinary, type DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { constants as h2 } from "node:http2";
import type { HttpRequest, HttpResponse } from "../http-io.js";

/**
 * Malformed request bytes are the caller's fault, so they answer INVALID_ARGUMENT on every RPC protocol.
 * connect-es answers some of them INTERNAL (binary that does not parse: "parse binary"; a frame with the
 * compressed flag but no `grpc-encoding`: "received compressed envelope"), and it parses before any
 * interceptor runs. So the request body is checked here, before connect reads it: a failed check ends the
 * body with a ConnectError, which connect answers with that code in the protocol's own error shape.
 * Every A2A rpc takes exactly one request message, so reading it whole first changes nothing.
 */
export function checkedRequestBody(body: AsyncIterable<Uint8Array>, request: { contentType: string; header: Headers; input: DescMessage; maxBytes: number }): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      const chunks: Uint8Array[] = [];
      let size = 0;
      const iterator = body[Symbol.asyncIterator]();
      for (let step = await iterator.next(); !step.done; step = await iterator.next()) {
        chunks.push(step.value);
        size += step.value.byteLength;
        // Larger than any message we take: connect answers RESOURCE_EXHAUSTED from the frame header, unbuffered.
        if (size > request.maxBytes + ENVELOPE_HEADER) {
          yield* chunks;
          for (let rest = await iterator.next(); !rest.done; rest = await iterator.next()) yield rest.value;
          return;
        }
      }
      const bytes = Buffer.concat(chunks);
      checkRequestBytes(bytes, request);
      yield bytes;
    },
  };
}

const ENVELOPE_HEADER = 5;
const COMPRESSED_FLAG = 0b1;

function checkRequestBytes(bytes: Buffer, request: { contentType: string; header: Headers; input: DescMessage }): void {
  const type = request.contentType.split(";")[0]!.trim().toLowerCase();
  const binary = !type.endsWith("json");
  if (type === "application/proto") {
    // Connect unary: the body is the message (decompressed by connect when Content-Encoding says so).
    if (!request.header.get("content-encoding") || request.header.get("content-encoding") === "identity") parses(bytes, request.input);
    return;
  }
  if (!/^application\/(grpc|grpc-web|connect)(\+|$)/.test(type)) return;
  const encoding = request.header.get(type.startsWith("application/connect") ? "connect-content-encoding" : "grpc-encoding");
  const compressed = encoding !== null && encoding !== "identity";
  for (let offset = 0; offset + ENVELOPE_HEADER <= bytes.length; ) {
    const flags = bytes[offset]!;
    const length = bytes.readUInt32BE(offset + 1);
    const payload = bytes.subarray(offset + ENVELOPE_HEADER, offset + ENVELOPE_HEADER + length);
    if (payload.length < length) return; // a truncated frame: connect answers it (INVALID_ARGUMENT)
    if (flags & COMPRESSED_FLAG && !compressed) {
      throw new ConnectError("the request frame has the compressed flag set, but the request names no encoding (grpc-encoding)", Code.InvalidArgument);
    }
    if (binary && !(flags & COMPRESSED_FLAG) && (flags & 0x80) === 0) parses(payload, request.input);
    offset += ENVELOPE_HEADER + length;
  }
}

function parses(bytes: Uint8Array, input: DescMessage): void {
  try {
    fromBinary(input, bytes);
  } catch (err) {
    throw new ConnectError(`the request is not a valid ${input.typeName} in protobuf binary: ${err instanceof Error ? err.message : String(err)}`, Code.InvalidArgument);
  }
}

/**
 * An HTTP/2 answer sent before the request body was read to its end (an oversized or refused message) also
 * resets the request side with NO_ERROR (RFC 9113 §8.1). Otherwise the unread body keeps the stream's and the
 * connection's flow-control windows shut: the caller can never finish sending, and a client whose call ends
 * only when its send side does (gRPC C-core: Python, C++) waits for its deadline although the status was sent.
 */
export function resetUnreadRequestOnFinish(req: HttpRequest, res: HttpResponse): void {
  if (!("stream" in req)) return;
  const stream = req.stream;
  const resetIfUnread = () => {
    if (!req.complete && !stream.closed && !stream.destroyed) stream.close(h2.NGHTTP2_NO_ERROR);
  };
  // The compatibility layer's own listener sends the trailers first; then the reset follows them.
  stream.on("wantTrailers", () => setImmediate(resetIfUnread));
}
