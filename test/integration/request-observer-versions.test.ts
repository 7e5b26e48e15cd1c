// The request observer labels a gRPC call with the A2A version whose service it called, as the version registry
// says (src/a2a/versions.ts `versionOfRpcService`): the service of a2a.v1 is 0.3, that of lf.a2a.v1 is 1.0,
// whatever the package is called.
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { A2AService as V03Service } from "../../src/gen/a2a/v1/a2a_pb.js";
import { A2AService as V10Service } from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { startTestApp, TEST_WORKFLOWS_DIR, type TestApp } from "../support/start-server.js";

const KEY = "observer-key-0123456789abcdef";

describe("request observer: the A2A version of a gRPC call comes from the registry", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      WORKFLOWS_DIR: TEST_WORKFLOWS_DIR,
      API_KEYS: JSON.stringify([
        {
          id: "obs",
          tenant: "acme",
          scopes: ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"],
          key: KEY,
        },
      ]),
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  const headers = { authorization: `Bearer ${KEY}` };
  const notFound = async (call: Promise<unknown>) => {
    const err = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
  };
  const requestLines = async (method: string) => {
    const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
    return text
      .split("\n")
      .filter(
        (l) =>
          l.startsWith("openwop_requests_total{") && l.includes('binding="grpc"') && l.includes(`method="${method}"`),
      );
  };

  it("a2a.v1 calls count as 0.3 and lf.a2a.v1 calls as 1.0", async () => {
    const transport = createGrpcTransport({ baseUrl: t.baseUrl });
    await notFound(createClient(V03Service, transport).getTask({ name: `tasks/${randomUUID()}` }, { headers }));
    await notFound(
      createClient(V10Service, transport).getTask(
        { id: randomUUID() },
        { headers: { ...headers, "a2a-version": "1.0" } },
      ),
    );
    const v03 = await requestLines("a2a.v1.A2AService/GetTask");
    const v10 = await requestLines("lf.a2a.v1.A2AService/GetTask");
    expect(v03).toHaveLength(1);
    expect(v03[0]).toContain('a2a_version="0.3"');
    expect(v10).toHaveLength(1);
    expect(v10[0]).toContain('a2a_version="1.0"');
  });
});
