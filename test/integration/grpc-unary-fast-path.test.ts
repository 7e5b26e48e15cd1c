// The gRPC unary fast path (src/transport/connect/grpc-unary-fast-path.ts) answers plain unary gRPC calls
// without connect-node's per-call machinery. Every case here is sent twice on the wire: once plainly
// (`application/grpc`, no grpc-encoding: the fast path) and once naming `grpc-encoding: gzip` with the same
// uncompressed frames (valid gRPC, and left to connect); both must answer the same headers, status, message,
// details and body. The fast path is seen at work by what only it does: it answers an oversized frame from
// its header alone, where connect (behind our body check) waits for the body.
import { connect, type ClientHttp2Session, type IncomingHttpHeaders } from "node:http2";
import { randomUUID } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v03pb from "../../src/gen/a2a/v1/a2a_pb.js";
import * as v10pb from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { startTestApp, TEST_WORKFLOWS_DIR, type TestApp } from "../support/start-server.js";
import { grpcFrame } from "../support/grpc-frame.js";

const KEY = "fast-path-key-0123456789abcdef";
const MAX_BODY_BYTES = 64 * 1024;
const V03 = "/a2a.v1.A2AService";
const V10 = "/lf.a2a.v1.A2AService";

interface Answer {
  headers: IncomingHttpHeaders;
  trailers: IncomingHttpHeaders;
  status: string | undefined;
  message: string;
  /** The response messages, decompressed. */
  frames: Buffer[];
  rstCode: number;
}

describe("gRPC unary fast path", () => {
  let t: TestApp;
  let session: ClientHttp2Session;
  beforeAll(async () => {
    t = await startTestApp({
      WORKFLOWS_DIR: TEST_WORKFLOWS_DIR,
      MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      API_KEYS: JSON.stringify([
        {
          id: "fast",
          tenant: "acme",
          scopes: ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"],
          key: KEY,
        },
      ]),
    });
    session = connect(t.baseUrl);
  });
  afterAll(async () => {
    session?.close();
    await t?.close();
  });

  const auth = { authorization: `Bearer ${KEY}` };
  const VIA_CONNECT = { "grpc-encoding": "gzip" };

  /** One call; `end: false` leaves the request side open until `finish` is called (or the answer came). */
  function send(path: string, body: Buffer, headers: Record<string, string> = {}, end = true) {
    // Without grpc-accept-encoding connect would answer in the request's encoding: name one on both paths.
    const req = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      "grpc-accept-encoding": "identity",
      ...auth,
      ...headers,
    });
    const answer = new Promise<Answer>((resolve, reject) => {
      let head: IncomingHttpHeaders = {};
      let trailers: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      req.on("response", (h) => (head = h));
      req.on("trailers", (h) => (trailers = h));
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("error", reject);
      req.on("close", () => {
        const { date: _date, ...headers } = head;
        resolve({
          headers,
          trailers,
          status: trailers["grpc-status"] as string | undefined,
          message: decodeURIComponent(String(trailers["grpc-message"] ?? "")),
          frames: framesOf(Buffer.concat(chunks)),
          rstCode: req.rstCode,
        });
      });
    });
    if (end) req.end(body);
    else req.write(body);
    return { answer, finish: () => req.end() };
  }
  function framesOf(bytes: Buffer): Buffer[] {
    const frames: Buffer[] = [];
    for (let offset = 0; offset + 5 <= bytes.length; offset += 5 + bytes.readUInt32BE(offset + 1)) {
      const payload = bytes.subarray(offset + 5, offset + 5 + bytes.readUInt32BE(offset + 1));
      frames.push(bytes[offset]! & 1 ? gunzipSync(payload) : payload);
    }
    return frames;
  }
  /** The same call on the fast path and through connect: both answers. */
  async function both(path: string, body: Buffer, headers: Record<string, string> = {}): Promise<[Answer, Answer]> {
    const fast = await send(path, body, headers).answer;
    const slow = await send(path, body, { ...headers, ...VIA_CONNECT }).answer;
    return [fast, slow];
  }
  const sameAnswer = async (path: string, body: Buffer, headers: Record<string, string> = {}) => {
    const [fast, slow] = await both(path, body, headers);
    expect(fast).toEqual(slow);
    return fast;
  };
  const within = <T>(promise: Promise<T>, ms: number) =>
    Promise.race([promise, new Promise<"pending">((resolve) => setTimeout(() => resolve("pending"), ms))]);

  const send03 = (skillId = "echo") =>
    grpcFrame(
      toBinary(
        v03pb.SendMessageRequestSchema,
        create(v03pb.SendMessageRequestSchema, {
          request: {
            messageId: randomUUID(),
            role: v03pb.Role.USER,
            content: [{ part: { case: "text", value: "hello" } }],
            metadata: { skillId },
          },
          configuration: { blocking: true },
        }),
      ),
    );
  const getTask10 = (id: string) =>
    grpcFrame(toBinary(v10pb.GetTaskRequestSchema, create(v10pb.GetTaskRequestSchema, { id })));
  const card03 = grpcFrame(toBinary(v03pb.GetAgentCardRequestSchema, create(v03pb.GetAgentCardRequestSchema)));

  it("the fast path is at work: it answers an oversized frame from its header, while connect waits for the body", async () => {
    const header = grpcFrame(new Uint8Array(), 0, MAX_BODY_BYTES + 1);
    const fast = send(`${V03}/GetTask`, header, {}, false);
    const answered = await within(fast.answer, 2000);
    expect(answered).not.toBe("pending");
    const slow = send(`${V03}/GetTask`, header, VIA_CONNECT, false);
    expect(await within(slow.answer, 300)).toBe("pending");
    slow.finish();
    const late = await slow.answer;
    expect(answered).toEqual(late);
    expect(late.status).toBe("8");
    expect(late.message).toBe(
      `message size ${MAX_BODY_BYTES + 1} is larger than configured readMaxBytes ${MAX_BODY_BYTES}`,
    );
    // Answered before the body ended: the request side was reset with NO_ERROR after the trailers.
    expect((answered as Answer).rstCode).toBe(0);
  });

  it("grpc-message is percent-encoded as the gRPC spec says, on the fast path and through connect alike", async () => {
    const plain = await sameAnswer(`${V10}/GetTask`, getTask10("nope-x"));
    expect(plain.status).toBe("5");
    expect(plain.trailers["grpc-message"]).toBe("Task not found: nope-x");
    // Only bytes outside 0x20-0x7E (here the UTF-8 of "é") and "%" itself are encoded.
    const odd = await sameAnswer(`${V10}/GetTask`, getTask10("50%-off/café,ok"));
    expect(odd.trailers["grpc-message"]).toBe("Task not found: 50%25-off/caf%C3%A9,ok");
    expect(odd.message).toBe("Task not found: 50%-off/café,ok");
  });

  it("a whole oversized frame: RESOURCE_EXHAUSTED, and the session stays usable", async () => {
    const big = Buffer.alloc(MAX_BODY_BYTES * 2 + 5, 1);
    big[0] = 0;
    big.writeUInt32BE(MAX_BODY_BYTES * 2, 1);
    const answer = await sameAnswer(`${V03}/GetTask`, big);
    expect(answer.status).toBe("8");
    expect((await send(`${V03}/GetAgentCard`, card03).answer).status).toBe("0");
  });

  it("GetAgentCard: the same headers, trailers and message bytes, plain and with gzip negotiated for the response", async () => {
    const plain = await sameAnswer(`${V03}/GetAgentCard`, card03);
    expect(plain.status).toBe("0");
    expect(plain.headers["content-type"]).toBe("application/grpc+proto");
    expect(plain.frames).toHaveLength(1);
    expect(fromBinary(v03pb.AgentCardSchema, plain.frames[0]!).name).not.toBe("");
    const gzip = await sameAnswer(`${V03}/GetAgentCard`, card03, { "grpc-accept-encoding": "gzip" });
    expect(gzip.headers["grpc-encoding"]).toBe("gzip");
    expect(gzip.frames).toEqual(plain.frames);
    // `application/grpc+proto` takes the fast path too.
    expect(await send(`${V03}/GetAgentCard`, card03, { "content-type": "application/grpc+proto" }).answer).toEqual(
      plain,
    );
  });

  it("SendMessage completes the echo skill on both paths", async () => {
    const [fast, slow] = await both(`${V03}/SendMessage`, send03());
    for (const answer of [fast, slow]) {
      expect(answer.status).toBe("0");
      const res = fromBinary(v03pb.SendMessageResponseSchema, answer.frames[0]!);
      expect(res.payload.case).toBe("task");
      expect(res.payload.case === "task" && res.payload.value.status?.state).toBe(v03pb.TaskState.COMPLETED);
    }
    expect(fast.headers).toEqual(slow.headers);
    expect(fast.trailers).toEqual(slow.trailers);
  });

  it("GetTask of an unknown task: NOT_FOUND with the same message and details (1.0)", async () => {
    const answer = await sameAnswer(`${V10}/GetTask`, getTask10(randomUUID()), { "a2a-version": "1.0" });
    expect(answer.status).toBe("5");
    expect(answer.trailers["grpc-status-details-bin"]).toBeTruthy();
  });

  it("version, authentication and deadline errors", async () => {
    const badVersion = await sameAnswer(`${V10}/GetTask`, getTask10(randomUUID()), { "a2a-version": "9.9" });
    expect(badVersion.status).toBe("9");
    const noKey = await sameAnswer(`${V03}/GetAgentCard`, card03, { authorization: "Bearer wrong-key-0123456789" });
    expect(noKey.status).toBe("16");
    const badTimeout = await sameAnswer(`${V03}/GetAgentCard`, card03, { "grpc-timeout": "soon" });
    expect(badTimeout).toMatchObject({ status: "3", message: "protocol error: invalid grpc timeout value: soon" });
    const expired = await sameAnswer(`${V03}/GetAgentCard`, card03, { "grpc-timeout": "0m" });
    expect(expired).toMatchObject({ status: "4", message: "the operation timed out" });
    // Work still running at the deadline (a blocking send whose workflow waits 400 ms first) is cut short there.
    for (const headers of [{}, VIA_CONNECT]) {
      const started = Date.now();
      const cut = await send(`${V03}/SendMessage`, send03("slow-approval"), { "grpc-timeout": "150m", ...headers })
        .answer;
      expect(cut).toMatchObject({ status: "4", message: "the operation timed out" });
      expect(Date.now() - started).toBeLessThan(390);
    }
    // A deadline past Node's timer limit is clamped, not expired at once.
    expect((await sameAnswer(`${V03}/GetAgentCard`, card03, { "grpc-timeout": "99999999H" })).status).toBe("0");
  });

  it("malformed bodies: the same codes and messages as connect behind the body check", async () => {
    const junk = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
    const malformed = await sameAnswer(`${V03}/SendMessage`, grpcFrame(junk));
    expect(malformed).toMatchObject({
      status: "3",
      message: expect.stringContaining("not a valid a2a.v1.SendMessageRequest in protobuf binary"),
    });
    expect(await sameAnswer(`${V03}/GetAgentCard`, Buffer.alloc(0))).toMatchObject({
      status: "12",
      message: "protocol error: missing input message for unary method",
    });
    expect(await sameAnswer(`${V03}/GetAgentCard`, Buffer.concat([card03, card03]))).toMatchObject({
      status: "12",
      message: "protocol error: received extra input message for unary method",
    });
    expect(await sameAnswer(`${V03}/GetAgentCard`, grpcFrame(Buffer.from([1, 2, 3]), 0, 10))).toMatchObject({
      status: "3",
      message: "protocol error: incomplete envelope",
    });
    expect(await sameAnswer(`${V03}/GetAgentCard`, Buffer.concat([card03, Buffer.from([0, 0])]))).toMatchObject({
      status: "3",
      message: "protocol error: incomplete envelope",
    });
    // A frame flagged end-of-stream is parsed by connect itself (the body check skips it).
    expect((await sameAnswer(`${V03}/SendMessage`, grpcFrame(junk, 2))).status).toBe("13");
  });

  it("the request observer still reads the status from the trailers (metrics outcome)", async () => {
    const count = async () => {
      const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
      const line = text
        .split("\n")
        .find(
          (l) =>
            l.startsWith("openwop_requests_total{") &&
            l.includes('binding="grpc"') &&
            l.includes('method="lf.a2a.v1.A2AService/GetTask"') &&
            l.includes('outcome="NOT_FOUND"'),
        );
      return line ? Number(line.split(" ")[1]) : 0;
    };
    const before = await count();
    expect((await send(`${V10}/GetTask`, getTask10(randomUUID()), { "a2a-version": "1.0" }).answer).status).toBe("5");
    expect(await count()).toBe(before + 1);
  });

  it("a compressed frame without grpc-encoding is refused in the body check's words", async () => {
    const answer = await send(`${V03}/GetAgentCard`, grpcFrame(Buffer.from([0x1f, 0x8b]), 1)).answer;
    expect(answer).toMatchObject({
      status: "3",
      message: "the request frame has the compressed flag set, but the request names no encoding (grpc-encoding)",
    });
  });
});
