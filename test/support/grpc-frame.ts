/**
 * One length-prefixed message as gRPC, gRPC-Web and Connect streams carry it: a flags byte, a 4-byte
 * big-endian length, the payload. `length` may claim more than the payload has (a truncated frame).
 */
export function grpcFrame(payload: Uint8Array, flags = 0, length = payload.length): Buffer {
  const out = Buffer.alloc(5 + payload.length);
  out[0] = flags;
  out.writeUInt32BE(length, 1);
  Buffer.from(payload).copy(out, 5);
  return out;
}
