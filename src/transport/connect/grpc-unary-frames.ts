import type { Http2ServerRequest } from "node:http2";
import { fromBinary, toBinary, type DescMessage, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { compressedWithoutEncoding, parseBinaryRequest } from "./rpc-request-check.js";

// The bytes of a unary gRPC call on the fast path (grpc-unary-fast-path.ts): its one request message, read
// and refused as connect-node (behind our body check, rpc-request-check.ts) reads and refuses it, and the
// frame of its answer.

const HEADER = 5;
export const COMPRESSED = 0b1;
const END_STREAM = 0b10;

/** The request stream closed before its body ended: there is nobody to answer. */
export const GONE = Symbol("request gone");

/**
 * The body, read as it arrives: a first frame longer than `maxBytes` is refused from its header (nothing more
 * is buffered); past `maxBytes` plus a header without that, the answer comes from what was read so far.
 */
export function readUnaryRequest(req: Http2ServerRequest, input: DescMessage, maxBytes: number): Promise<Message> {
  return new Promise<Message>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (complete: boolean, length?: number) => {
      req.off("data", onData).off("end", onEnd);
      if (!complete) req.pause();
      try {
        if (length !== undefined) throw tooLarge(length, maxBytes);
        resolve(
          singleMessage(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), input, maxBytes, complete),
        );
      } catch (err) {
        reject(err);
      }
    };
    const onData = (chunk: Buffer) => {
      const before = size;
      chunks.push(chunk);
      size += chunk.length;
      if (before < HEADER && size >= HEADER) {
        const length = (chunks[0]!.length >= HEADER ? chunks[0]! : Buffer.concat(chunks)).readUInt32BE(1);
        if (length > maxBytes) return settle(false, length);
      }
      if (size > maxBytes + HEADER) settle(false);
    };
    const onEnd = () => settle(true);
    req.on("data", onData).on("end", onEnd);
    req.once("close", () => reject(GONE)).on("error", () => reject(GONE));
  });
}

/**
 * The request message from the body's frames, failing as connect does behind our body check: first the
 * check (rpc-request-check.ts) on every whole frame, then connect's reader (a header over the limit, then
 * missing, extra or truncated frames, in that order). `complete` false: the body went past the limit in
 * several frames, so the check passed it on unchecked to connect, which parses the first frame itself; the
 * answer then comes from what was read (a header over the limit, the first frame's parse error, else "extra":
 * connect would read on, and could still end in "incomplete envelope" if the body stopped mid-frame).
 */
function singleMessage(bytes: Buffer, input: DescMessage, maxBytes: number, complete: boolean): Message {
  let first: Message | undefined;
  for (let offset = 0, index = 0; complete && offset + HEADER <= bytes.length; index++) {
    const end = offset + HEADER + bytes.readUInt32BE(offset + 1);
    if (end > bytes.length) break;
    if (bytes[offset]! & COMPRESSED) throw compressedWithoutEncoding();
    if (!(bytes[offset]! & END_STREAM)) {
      const message = parseBinaryRequest(input, bytes.subarray(offset + HEADER, end));
      if (index === 0) first = message;
    }
    offset = end;
  }
  const frames: Array<{ flags: number; data: Buffer }> = [];
  let offset = 0;
  while (offset + HEADER <= bytes.length) {
    const length = bytes.readUInt32BE(offset + 1);
    if (length > maxBytes) throw tooLarge(length, maxBytes);
    if (offset + HEADER + length > bytes.length) break;
    frames.push({ flags: bytes[offset]!, data: bytes.subarray(offset + HEADER, offset + HEADER + length) });
    offset += HEADER + length;
  }
  if (frames.length === 0)
    throw offset < bytes.length
      ? incomplete()
      : new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented);
  first ??= connectParse(input, frames[0]!);
  if (frames.length > 1) connectParse(input, frames[1]!);
  if (frames.length > 1 || !complete)
    throw new ConnectError("protocol error: received extra input message for unary method", Code.Unimplemented);
  if (offset < bytes.length) throw incomplete();
  return first;
}

/** How connect reads a frame the body check did not (an end-of-stream flag, or a body past the limit). */
function connectParse(input: DescMessage, { flags, data }: { flags: number; data: Buffer }): Message {
  if (flags & COMPRESSED)
    throw new ConnectError("received compressed envelope, but do not know how to decompress", Code.Internal);
  try {
    return fromBinary(input, data);
  } catch (err) {
    throw new ConnectError(`parse binary: ${err instanceof Error ? err.message : String(err)}`, Code.Internal);
  }
}

export function serialize(output: DescMessage, message: Message): Uint8Array {
  try {
    return toBinary(output, message);
  } catch (err) {
    throw new ConnectError(`serialize binary: ${err instanceof Error ? err.message : String(err)}`, Code.Internal);
  }
}

export function frame(flags: number, data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(HEADER + data.byteLength);
  out[0] = flags;
  out.writeUInt32BE(data.byteLength, 1);
  out.set(data, HEADER);
  return out;
}

const tooLarge = (length: number, maxBytes: number) =>
  new ConnectError(`message size ${length} is larger than configured readMaxBytes ${maxBytes}`, Code.ResourceExhausted);
const incomplete = () => new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
