// Issue 33, item 4: a body over MAX_BODY_BYTES gets the binding's own answer (413, or RESOURCE_EXHAUSTED in the
// RPC protocol's shape), and the connection then either keeps working or says `Connection: close` and closes:
// never a keep-alive connection that answers nothing more. Every binding is driven over a raw HTTP/1.1 socket
// (so no client library opens a fresh connection behind our back), with a second request on the same
// connection; gRPC over one HTTP/2 session that opens a second stream.
import { connect as connectH2 } from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UNREAD_BODY_DRAIN_BYTES } from "../../src/transport/unread-request-body.js";
import { grpcFrame } from "../support/grpc-frame.js";
import { RawHttp1, type RawResponse } from "../support/raw-http1.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const MB2 = 2 * 1024 * 1024;
const v10 = { "a2a-version": "1.0" };
/** A SendMessage whose one text part makes the body `size` bytes of JSON. */
const bigJson = (size: number) => {
  const head = '{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"';
  const tail = '"}]}}';
  return Buffer.from(head + "a".repeat(size - head.length - tail.length) + tail);
};

type Expect = (res: RawResponse) => void;
const httpTooLarge: Expect = (res) => expect(res.status).toBe(413);
const connectUnaryExhausted: Expect = (res) => {
  expect(res.status).toBe(429); // Connect's HTTP status for resource_exhausted
  expect((JSON.parse(res.body.toString()) as { code: string }).code).toBe("resource_exhausted");
};
/** gRPC-Web: HTTP 200, the status in the trailer frame. */
const grpcWebExhausted: Expect = (res) => {
  expect(res.status).toBe(200);
  expect(res.body.toString("latin1")).toMatch(/grpc-status: ?8\b/);
};
/** Connect streaming: HTTP 200, the error in the end-stream message. */
const connectStreamExhausted: Expect = (res) => {
  expect(res.status).toBe(200);
  expect(res.body.toString("latin1")).toContain('"code":"resource_exhausted"');
};

interface Binding {
  name: string;
  path: string;
  headers: Record<string, string>;
  body(size: number): Buffer;
  refused: Expect;
}

const json = { "content-type": "application/json" };
const BINDINGS: Binding[] = [
  { name: "JSON-RPC 0.3", path: "/a2a/jsonrpc", headers: json, body: bigJson, refused: httpTooLarge },
  { name: "JSON-RPC 1.0", path: "/a2a/jsonrpc", headers: { ...json, ...v10 }, body: bigJson, refused: httpTooLarge },
  { name: "HTTP+JSON 0.3", path: "/v1/message:send", headers: json, body: bigJson, refused: httpTooLarge },
  { name: "HTTP+JSON 1.0", path: "/message:send", headers: { ...json, ...v10 }, body: bigJson, refused: httpTooLarge },
  { name: "OpenWOP runs", path: "/v1/runs", headers: json, body: bigJson, refused: httpTooLarge },
  { name: "console", path: "/console/api/bulk/cancel", headers: json, body: bigJson, refused: httpTooLarge },
  ...(["a2a.v1", "lf.a2a.v1"] as const).flatMap((service): Binding[] => {
    const path = `/${service}.A2AService/SendMessage`;
    const version = service === "lf.a2a.v1" ? v10 : {};
    return [
      {
        name: `Connect JSON ${service}`,
        path,
        headers: { ...json, ...version },
        body: bigJson,
        refused: connectUnaryExhausted,
      },
      {
        name: `Connect binary ${service}`,
        path,
        headers: { "content-type": "application/proto", ...version },
        body: bigJson,
        refused: connectUnaryExhausted,
      },
      {
        name: `gRPC-Web JSON ${service}`,
        path,
        headers: { "content-type": "application/grpc-web+json", ...version },
        body: (n) => grpcFrame(bigJson(n - 5)),
        refused: grpcWebExhausted,
      },
      {
        name: `gRPC-Web binary ${service}`,
        path,
        headers: { "content-type": "application/grpc-web+proto", ...version },
        body: (n) => grpcFrame(bigJson(n - 5)),
        refused: grpcWebExhausted,
      },
      {
        name: `Connect streaming ${service}`,
        path: `/${service}.A2AService/SendStreamingMessage`,
        headers: { "content-type": "application/connect+json", ...version },
        body: (n) => grpcFrame(bigJson(n - 5)),
        refused: connectStreamExhausted,
      },
    ];
  }),
];

describe("an oversize body ends cleanly on every binding (issue 33 item 4)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({});
  });
  afterAll(() => t?.close());

  /** The refused request, then (when the connection stays) a second one on the same socket. */
  async function oversize(binding: Binding, size: number, chunked: boolean) {
    const conn = await RawHttp1.open(t.port);
    try {
      conn.send("POST", binding.path, binding.headers, binding.body(size), chunked);
      const first = await conn.response();
      expect(first, `${binding.name}: an answer`).toBeDefined();
      binding.refused(first!);
      if (first!.headers["connection"] === "close") {
        await conn.closed; // the socket closes: the test times out if it stays open
        return { first: first!, second: undefined };
      }
      conn.send("GET", "/.well-known/agent-card.json", {});
      const second = await conn.response();
      return { first: first!, second };
    } finally {
      conn.close();
    }
  }

  for (const binding of BINDINGS) {
    it(`${binding.name}: 2 MB with Content-Length, then the connection answers the next request`, async () => {
      const { first, second } = await oversize(binding, MB2, false);
      expect(first.headers["connection"]).toBe("keep-alive");
      expect(second?.status).toBe(200);
    });

    it(`${binding.name}: 2 MB chunked, then Connection: close and the socket closes`, async () => {
      const { first } = await oversize(binding, MB2, true);
      expect(first.headers["connection"]).toBe("close");
    });
  }

  it("a declared body over the drain bound closes the connection after the answer on HTTP and RPC bindings alike", async () => {
    const size = UNREAD_BODY_DRAIN_BYTES + 1024 * 1024;
    for (const binding of BINDINGS.filter(
      (b) => b.name === "JSON-RPC 0.3" || b.name === "Connect JSON lf.a2a.v1" || b.name === "gRPC-Web binary a2a.v1",
    )) {
      const { first } = await oversize(binding, size, false);
      expect(first.headers["connection"], binding.name).toBe("close");
    }
  });

  it("gRPC (binary and JSON, both service names): RESOURCE_EXHAUSTED, and a second stream on the same HTTP/2 session is answered", async () => {
    const session = connectH2(t.baseUrl);
    const call = (path: string, type: string, body: Buffer, headers: Record<string, string> = {}) =>
      new Promise<string | undefined>((resolve, reject) => {
        const req = session.request({
          ":method": "POST",
          ":path": path,
          "content-type": type,
          te: "trailers",
          ...headers,
        });
        let status: string | undefined;
        req.on("response", (h) => (status ??= h["grpc-status"] as string | undefined));
        req.on("trailers", (h) => (status = h["grpc-status"] as string));
        req.on("error", reject);
        req.resume();
        req.on("close", () => resolve(status));
        req.end(body);
      });
    try {
      for (const service of ["a2a.v1", "lf.a2a.v1"]) {
        const version = service === "lf.a2a.v1" ? v10 : {};
        for (const type of ["application/grpc", "application/grpc+json"]) {
          expect(
            await call(`/${service}.A2AService/SendMessage`, type, grpcFrame(bigJson(MB2)), version),
            `${service} ${type}`,
          ).toBe("8");
          expect(
            await call(
              `/${service}.A2AService/GetTask`,
              type,
              grpcFrame(type.endsWith("json") ? Buffer.from('{"name":"tasks/none"}') : new Uint8Array()),
              version,
            ),
            `${service} ${type} second stream`,
          ).toMatch(/^\d+$/);
        }
      }
    } finally {
      session.close();
    }
  });
});
