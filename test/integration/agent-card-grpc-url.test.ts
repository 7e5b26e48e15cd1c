import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/start-server.js";

const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));
type Obj = Record<string, any>;

/**
 * The gRPC interface URL on the card is the gRPC target `host:port` (README "gRPC interface URL": the A2A
 * proto's AgentInterface comment, a2a-python, a2a-go, a2a-js and a2a-java all hand the card's URL to their
 * gRPC channel as a target). Shown with grpc-js, the library under a2a-js's gRPC transport: the card's URL
 * taken as it is reaches the agent.
 */
describe("the card's gRPC interface URL", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ AGENT_CARD_BARE: "hybrid" });
  });
  afterAll(() => t.close());

  const card = async (headers: Record<string, string> = {}) =>
    (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers })).json()) as Obj;

  it("is host:port, without a scheme, on the 0.3 and the 1.0 card", async () => {
    const hybrid = await card();
    const pure = await card({ "A2A-Version": "1.0" });
    const urls = [
      ...hybrid["additionalInterfaces"].filter((i: Obj) => i["transport"] === "GRPC").map((i: Obj) => i["url"]),
      ...pure["supportedInterfaces"].filter((i: Obj) => i["protocolBinding"] === "GRPC").map((i: Obj) => i["url"]),
    ];
    expect(urls.length).toBe(3); // 0.3 additionalInterfaces, 1.0 and 0.3 supportedInterfaces
    expect(new Set(urls)).toEqual(new Set([`127.0.0.1:${t.port}`]));
  });

  it.each([
    ["0.3", "a2a/v1/a2a.proto", (pkg: any) => pkg.a2a.v1.A2AService, "GetTask", { name: "tasks/no-such-task" }],
    ["1.0", "lf/a2a/v1/a2a.proto", (pkg: any) => pkg.lf.a2a.v1.A2AService, "GetTask", { id: "no-such-task" }],
  ] as const)(
    "a stock grpc-js client given the %s card's URL as its target reaches the agent",
    async (version, proto, service, rpc, request) => {
      const interfaces = (await card({ "A2A-Version": version }))[
        version === "1.0" ? "supportedInterfaces" : "additionalInterfaces"
      ] as Obj[];
      const target = interfaces.find((i) => (i["protocolBinding"] ?? i["transport"]) === "GRPC")!["url"] as string;
      const pkg = grpc.loadPackageDefinition(
        protoLoader.loadSync(proto, {
          includeDirs: [protoDir],
          keepCase: false,
          longs: String,
          enums: String,
          defaults: true,
          oneofs: true,
        }),
      );
      const Service = service(pkg) as typeof grpc.Client;
      const client = new Service(target, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
      const metadata = new grpc.Metadata();
      metadata.set("a2a-version", version);
      try {
        const err = await new Promise<grpc.ServiceError | null>((resolve) =>
          client[rpc](request, metadata, (e: grpc.ServiceError | null) => resolve(e)),
        );
        // NOT_FOUND comes from our service: the call got through (an unusable target would be UNAVAILABLE).
        expect(err?.code).toBe(grpc.status.NOT_FOUND);
      } finally {
        client.close();
      }
    },
  );
});
