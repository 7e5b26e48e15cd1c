import type { ClientHttp2Session } from "node:http2";
import { grpcFrame } from "./grpc-frame.js";

/** The three proto wires of one unary rpc, spoken by hand so a test sees the exact bytes the server sent. */
export type Wire = "gRPC" | "Connect" | "gRPC-Web";

export interface RawAnswer {
  /** Everything the server sent back: headers, body and trailers. */
  raw: Buffer;
  /** The one response message (uncompressed: the calls ask for identity). */
  message: Uint8Array;
}

function messageOf(frames: Buffer, what: string): Uint8Array {
  for (let offset = 0; offset + 5 <= frames.length; offset += 5 + frames.readUInt32BE(offset + 1)) {
    if ((frames[offset]! & 0x80) === 0)
      return frames.subarray(offset + 5, offset + 5 + frames.readUInt32BE(offset + 1));
  }
  throw new Error(`${what}: no message frame in ${frames.toString("latin1")}`);
}

/**
 * One unary call on `wire` (Connect and gRPC-Web over HTTP/1.1 fetch, gRPC on `session`): the serialized
 * `request` in, the raw answer out. Anything but success throws, with what the server said.
 */
export async function rawRpc(
  baseUrl: string,
  session: ClientHttp2Session,
  wire: Wire,
  path: string,
  request: Uint8Array,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  if (wire === "Connect") {
    const res = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/proto", "connect-protocol-version": "1", ...headers },
      body: request,
    });
    const body = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${body.toString("latin1")}`);
    return { raw: Buffer.concat([Buffer.from(JSON.stringify([...res.headers])), body]), message: body };
  }
  if (wire === "gRPC-Web") {
    const res = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1", ...headers },
      body: grpcFrame(request),
    });
    const body = Buffer.from(await res.arrayBuffer());
    if (!/grpc-status: ?0\b/.test(body.toString("latin1"))) throw new Error(`${path}: ${body.toString("latin1")}`);
    return {
      raw: Buffer.concat([Buffer.from(JSON.stringify([...res.headers])), body]),
      message: messageOf(body, path),
    };
  }
  return new Promise<RawAnswer>((resolve, reject) => {
    const req = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      "grpc-accept-encoding": "identity",
      ...headers,
    });
    const chunks: Buffer[] = [];
    let head = {};
    let trailers: Record<string, unknown> = {};
    req.on("response", (h) => (head = h));
    req.on("trailers", (h) => (trailers = h));
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", reject);
    req.on("close", () => {
      const body = Buffer.concat(chunks);
      if (trailers["grpc-status"] !== "0")
        return reject(
          new Error(`${path}: grpc-status ${String(trailers["grpc-status"])} ${String(trailers["grpc-message"])}`),
        );
      resolve({
        raw: Buffer.concat([Buffer.from(JSON.stringify(head)), body, Buffer.from(JSON.stringify(trailers))]),
        message: messageOf(body, path),
      });
    });
    req.end(grpcFrame(request));
  });
}
