import { fromBinary, type DescMessage, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { constants as h2 } from "node:http2";
import { withoutUnknownFields } from "../../a2a/proto-json-unknown-fields.js";
import { BODY_ENVELOPE_DEPTH, nestingDepth } from "../../domain/json-input.js";
import type { HttpRequest } from "../http-io.js";

/**
 * The request bytes of every RPC protocol, checked (and, for JSON, cleaned) before connect-es reads them:
 * - Malformed bytes are the caller's fault, so they answer INVALID_ARGUMENT. connect-es answers some of them
 *   INTERNAL (binary that does not parse: "parse binary"; a frame with the compressed flag but no
 *   `grpc-encoding`: "received compressed envelope"), and it parses before any interceptor runs. A failed
 *   check ends the body with a ConnectError, which connect answers with that code in the protocol's shape.
 * - JSON that is not UTF-8 is refused rather than decoded lossily; unknown JSON fields are dropped (A2A 1.0
 *   §5.7, as binary protobuf skips unknown fields), so connect's strict reader still refuses wrong types and
 *   unknown enum names.
 * - JSON that does not parse, or nests deeper than MAX_INPUT_DEPTH plus the envelope, is INVALID_ARGUMENT
 *   here with a message of our own: connect's reader would echo the parser's text with a slice of the body,
 *   and recursing into a deep value (protobuf-es `fromJson`) overflows the stack (INTERNAL). Binary
 *   protobuf is bounded by protobuf-es itself (recursion limit 100); its parser text is not echoed either.
 * Every A2A rpc takes exactly one request message, so reading it whole first changes nothing.
 *
 * A body larger than any message we take is not read on: what came so far goes to connect, which answers
 * RESOURCE_EXHAUSTED from it (its own words), else the body ends with our RESOURCE_EXHAUSTED. `reading` tells
 * whether connect may still pull the body: once it may not, the node handler drains the rest or closes the
 * connection (unread-request-body.ts), so the next request on an HTTP/1.1 connection is answered.
 */
export function checkedRequestBody(body: AsyncIterable<Uint8Array>, request: RpcRequest): CheckedRequestBody {
  let reading = false;
  return {
    get reading() {
      return reading;
    },
    async *[Symbol.asyncIterator]() {
      reading = true;
      try {
        const chunks: Uint8Array[] = [];
        let size = 0;
        const iterator = body[Symbol.asyncIterator]();
        for (let step = await iterator.next(); !step.done; step = await iterator.next()) {
          chunks.push(step.value);
          size += step.value.byteLength;
          if (size > request.maxBytes + ENVELOPE_HEADER) {
            yield* chunks;
            throw new ConnectError(
              `the request body is larger than the limit of ${request.maxBytes} bytes`,
              Code.ResourceExhausted,
            );
          }
        }
        yield checkRequestBytes(Buffer.concat(chunks), request);
      } finally {
        reading = false;
      }
    },
  };
}

/** The checked body, and whether connect is pulling it now (started, and neither at its end nor refused). */
export interface CheckedRequestBody extends AsyncIterable<Uint8Array> {
  readonly reading: boolean;
}

export interface RpcRequest {
  contentType: string;
  header: Headers;
  input: DescMessage;
  maxBytes: number;
  /** MAX_INPUT_DEPTH: a JSON message nested deeper than it plus its envelope is refused before it is decoded. */
  maxDepth: number;
}

const ENVELOPE_HEADER = 5;
const COMPRESSED_FLAG = 0b1;
const END_STREAM_FLAG = 0b10;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function checkRequestBytes(bytes: Buffer, request: RpcRequest): Buffer {
  const type = request.contentType.split(";")[0]!.trim().toLowerCase();
  const json = type.endsWith("json");
  if (type === "application/proto" || type === "application/json") {
    // Connect unary: the body is the message (decompressed by connect when Content-Encoding says so).
    const encoding = request.header.get("content-encoding");
    return encoding && encoding !== "identity" ? bytes : checkMessage(bytes, request, json);
  }
  if (!/^application\/(grpc|grpc-web|connect)(\+|$)/.test(type)) return bytes;
  const encoding = request.header.get(
    type.startsWith("application/connect") ? "connect-content-encoding" : "grpc-encoding",
  );
  const compressed = encoding !== null && encoding !== "identity";
  const frames: Buffer[] = [];
  // Binary frames come back as they are: when every frame does, the body is passed on without a copy.
  let rewritten = false;
  let offset = 0;
  while (offset + ENVELOPE_HEADER <= bytes.length) {
    const flags = bytes[offset]!;
    const length = bytes.readUInt32BE(offset + 1);
    const payload = bytes.subarray(offset + ENVELOPE_HEADER, offset + ENVELOPE_HEADER + length);
    if (payload.length < length) break; // a truncated frame: connect answers it (INVALID_ARGUMENT)
    if (flags & COMPRESSED_FLAG && !compressed) throw compressedWithoutEncoding();
    const plain = !(flags & COMPRESSED_FLAG) && !(flags & END_STREAM_FLAG);
    const checked = plain ? checkMessage(payload, request, json) : payload;
    if (checked !== payload) rewritten = true;
    frames.push(
      checked !== payload ? envelope(flags, checked) : bytes.subarray(offset, offset + ENVELOPE_HEADER + length),
    );
    offset += ENVELOPE_HEADER + length;
  }
  if (!rewritten) return bytes;
  frames.push(bytes.subarray(offset));
  return Buffer.concat(frames);
}

function envelope(flags: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(ENVELOPE_HEADER);
  header[0] = flags;
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

/**
 * Binary: it must parse. JSON: strict UTF-8, valid JSON, bounded nesting, unknown fields dropped. The
 * messages name what is wrong, never the parser's text or the body's bytes.
 */
function checkMessage(bytes: Buffer, request: RpcRequest, json: boolean): Buffer {
  const { input } = request;
  if (!json) {
    parseBinaryRequest(input, bytes);
    return bytes;
  }
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new ConnectError("the request body is not valid UTF-8", Code.InvalidArgument);
  }
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch {
    throw new ConnectError("the request body is not valid JSON", Code.InvalidArgument);
  }
  // The same bound and words as the JSON bodies of the other bindings (`parseJsonBody`).
  const maxDepth = request.maxDepth + BODY_ENVELOPE_DEPTH;
  if (nestingDepth(value, maxDepth) > maxDepth) {
    throw new ConnectError(
      `the body is nested too deeply: more than ${maxDepth} levels of objects and arrays`,
      Code.InvalidArgument,
    );
  }
  return Buffer.from(JSON.stringify(withoutUnknownFields(input, value)));
}

/** A binary request message, or INVALID_ARGUMENT in our words (also used by the gRPC unary fast path). */
export function parseBinaryRequest<Desc extends DescMessage>(input: Desc, bytes: Uint8Array): MessageShape<Desc> {
  try {
    return fromBinary(input, bytes);
  } catch (err) {
    throw new ConnectError(
      `the request is not a valid ${input.typeName} in protobuf binary: ${binaryProblem(err)}`,
      Code.InvalidArgument,
    );
  }
}

/** A frame flagged compressed in a request that names no `grpc-encoding`. */
export function compressedWithoutEncoding(): ConnectError {
  return new ConnectError(
    "the request frame has the compressed flag set, but the request names no encoding (grpc-encoding)",
    Code.InvalidArgument,
  );
}

/** What is wrong with binary protobuf, in our words: protobuf-es's own text is not passed on. */
function binaryProblem(err: unknown): string {
  const text = err instanceof Error ? err.message : "";
  if (/recursion depth/i.test(text)) return "it nests deeper than protobuf's recursion limit of 100";
  if (/premature EOF|out of range|too long|truncated/i.test(text))
    return "it ends before its last field does (truncated)";
  return "it is malformed";
}

/**
 * A gRPC answer sent before the request body was read to its end (an oversized message: RESOURCE_EXHAUSTED
 * from the frame header) also resets the request side with NO_ERROR (RFC 9113 §8.1). Node does that itself
 * only for responses without trailers whose request was never read; otherwise the stream stays half-closed:
 * nobody reads the rest, so its flow-control window never reopens, the caller can never finish sending, and a
 * client whose call ends only when its send side does waits for its deadline although the status was sent.
 */
export function resetUnreadRequestAfterTrailers(req: HttpRequest): void {
  if (!("stream" in req)) return;
  const stream = req.stream;
  const resetIfUnread = () => {
    if (!req.complete && !stream.closed && !stream.destroyed) stream.close(h2.NGHTTP2_NO_ERROR);
  };
  // After the trailers are on their way: a reset in the same turn would overtake them, and the caller would
  // get no status at all.
  stream.on("wantTrailers", () => setImmediate(resetIfUnread));
}
