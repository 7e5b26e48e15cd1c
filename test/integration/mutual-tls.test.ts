// TLS and mutual TLS on the one port (docs/security.md "TLS and mutual TLS"): certificates made at test time
// with openssl; JSON-RPC and Connect over HTTPS/1.1 (undici), the @a2a-js/sdk client through a fetch with a
// client certificate, and @grpc/grpc-js over TLS (ALPN h2) with `credentials.createSsl`.
import { randomUUID } from "node:crypto";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from "@a2a-js/sdk/client";
import { Agent, fetch as undiciFetch, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp, TEST_WORKFLOWS_DIR } from "../support/start-server.js";
import { TestCertificates, type Issued } from "../support/test-certificates.js";

const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];
const KEY = "mtls-test-key-0123456789abcdef";
const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));

const certs = new TestCertificates();
const serverCa = certs.ca("server-ca");
const server = certs.leaf("server", serverCa, "/CN=localhost", { san: "DNS:localhost,IP:127.0.0.1" });
const clientCa = certs.ca("client-ca");
const otherCa = certs.ca("other-ca");
// Mapped by subject (tenant acme, every scope) and by SAN (tenant ops, read only).
const billing = certs.leaf("billing", clientCa, "/CN=billing-agent/O=Acme", {
  client: true,
  san: "URI:spiffe://acme/billing",
});
const ops = certs.leaf("ops", clientCa, "/CN=ops-bot", { client: true, san: "URI:spiffe://acme/ops" });
// Verified but in no TLS_CLIENT_PRINCIPALS entry.
const stranger = certs.leaf("stranger", clientCa, "/CN=stranger/O=Acme", { client: true });
// The mapped subject and SAN, but from another CA, or expired: neither is verified, so neither maps.
const impostor = certs.leaf("impostor", otherCa, "/CN=billing-agent/O=Acme", {
  client: true,
  san: "URI:spiffe://acme/billing",
});
const expired = certs.leaf("expired", clientCa, "/CN=billing-agent/O=Acme", {
  client: true,
  san: "URI:spiffe://acme/billing",
  expired: true,
});

const PRINCIPALS = JSON.stringify([
  { subject: "CN=billing-agent, O=Acme", tenant: "acme", scopes: ALL },
  { san: "URI:spiffe://acme/ops", tenant: "ops", scopes: ["runs:read"] },
]);

function tlsEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    WORKFLOWS_DIR: TEST_WORKFLOWS_DIR,
    TLS_CERT_FILE: server.certFile,
    TLS_KEY_FILE: server.keyFile,
    TLS_CLIENT_CA_FILE: clientCa.certFile,
    TLS_CLIENT_PRINCIPALS: PRINCIPALS,
    API_KEYS: JSON.stringify([{ id: "acme", tenant: "acme", scopes: ALL, key: KEY }]),
    ...extra,
  };
}

const agents: Agent[] = [];
function agentFor(identity?: Issued): Agent {
  const agent = new Agent({
    connect: { ca: serverCa.cert, ...(identity ? { cert: identity.cert, key: identity.key } : {}) },
  });
  agents.push(agent);
  return agent;
}

/** A JSON-RPC 0.3 call over HTTPS/1.1, with an optional client certificate and API key. */
async function jsonRpc(
  t: TestApp,
  method: string,
  params: unknown,
  identity?: Issued,
  key?: string,
): Promise<{ status: number; challenge: string | undefined; body: any }> {
  const res = await request(`${t.baseUrl}/a2a/jsonrpc`, {
    method: "POST",
    dispatcher: agentFor(identity),
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return {
    status: res.statusCode,
    challenge: res.headers["www-authenticate"] as string | undefined,
    body: await res.body.json(),
  };
}

function sendParams(text: string) {
  return {
    message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text }] },
    metadata: { skillId: "echo" },
  };
}

type A2AClient = grpc.Client & Record<string, any>;
function grpcClient(t: TestApp, identity?: Issued): A2AClient {
  const definition = protoLoader.loadSync("a2a/v1/a2a.proto", {
    includeDirs: [protoDir],
    keepCase: false,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(definition) as any;
  const credentials = grpc.credentials.createSsl(serverCa.cert, identity?.key ?? null, identity?.cert ?? null);
  return new pkg.a2a.v1.A2AService(`127.0.0.1:${t.port}`, credentials) as A2AClient;
}

function grpcGetTask(client: A2AClient, name: string): Promise<{ code: number; details: string }> {
  return new Promise((resolve) => {
    client["getTask"]({ name }, (err: grpc.ServiceError | null) =>
      resolve({ code: err?.code ?? grpc.status.OK, details: err?.details ?? "" }),
    );
  });
}

afterAll(async () => {
  await Promise.all(agents.map((a) => a.close()));
  certs.remove();
});

describe("mutual TLS, TLS_CLIENT_AUTH=optional", () => {
  let t: TestApp;
  const logs: string[] = [];
  beforeAll(async () => {
    t = await startTestApp(tlsEnv({ TLS_CLIENT_AUTH: "optional", LOG_LEVEL: "warn" }), undefined, undefined, { logs });
  });
  afterAll(() => t.close());

  it("a certificate mapped by subject is that principal: JSON-RPC over HTTPS runs in its tenant", async () => {
    const sent = await jsonRpc(t, "message/send", sendParams("hello over mTLS"), billing);
    expect(sent.status).toBe(200);
    expect(sent.body.result?.status?.state).toBe("completed");
    // The task belongs to tenant acme: the acme API key reads it, the ops certificate (tenant ops) does not.
    const byKey = await jsonRpc(t, "tasks/get", { id: sent.body.result.id }, undefined, KEY);
    expect(byKey.body.result?.id).toBe(sent.body.result.id);
    const byOps = await jsonRpc(t, "tasks/get", { id: sent.body.result.id }, ops);
    expect(byOps.body.error?.code).toBe(-32001);
  });

  it("a certificate mapped by SAN gets that entry's scopes only: 403 naming the certificate, no bearer challenge", async () => {
    const refused = await jsonRpc(t, "message/send", sendParams("no runs:create"), ops);
    expect(refused.status).toBe(403);
    expect(refused.challenge).toBeUndefined();
    expect(refused.body.error).toEqual({
      code: -32600,
      message: 'the client certificate "URI:spiffe://acme/ops" lacks the "runs:create" scope',
      data: { requiredScope: "runs:create" },
    });
  });

  it("an unmapped certificate alone is refused as unmapped; the log (not the answer) tells the operator what to map", async () => {
    logs.length = 0;
    const answer = await jsonRpc(t, "tasks/get", { id: "nope" }, stranger);
    expect(answer.status).toBe(401);
    expect(answer.challenge).toBe('Bearer realm="openwop-a2a-host"');
    expect(answer.body.error).toEqual({ code: -32600, message: "the client certificate is not mapped to a principal" });
    const notice = logs
      .map((line) => JSON.parse(line) as Record<string, any>)
      .find((l) => l["event"] === "auth.unmapped_certificate");
    expect(notice).toMatchObject({ level: 40, subject: "CN=stranger,O=Acme", subjectAltNames: [] });
    expect(notice?.["msg"]).toBe(
      'refused a verified client certificate that is not mapped to a principal: to let it in, add {"subject":"CN=stranger,O=Acme","tenant":"<tenant>","scopes":["<scope>"]} to TLS_CLIENT_PRINCIPALS',
    );
  });

  it("another CA's or an expired certificate is never looked at: 401 like a caller without credentials", async () => {
    for (const identity of [impostor, expired]) {
      const answer = await jsonRpc(t, "tasks/get", { id: "nope" }, identity);
      expect(answer.status, identity.certFile).toBe(401);
      expect(answer.body.error?.message).toMatch(/^missing credentials/);
    }
  });

  it("the card declares both ways in: mutualTLS and the API key", async () => {
    const card = (await (
      await request(`${t.baseUrl}/.well-known/agent-card.json`, { dispatcher: agentFor() })
    ).body.json()) as any;
    expect(Object.keys(card.securitySchemes).sort()).toEqual(["apiKey", "mtls"]);
    expect(card.securitySchemes.mtls).toEqual(expect.objectContaining({ type: "mutualTLS" }));
    expect(card.security).toEqual([{ mtls: [] }, { apiKey: [] }]);
  });

  it("callers without a certificate (or with an unmapped one) still use API keys", async () => {
    expect((await jsonRpc(t, "tasks/get", { id: "nope" }, undefined, KEY)).body.error?.code).toBe(-32001);
    expect((await jsonRpc(t, "tasks/get", { id: "nope" }, stranger, KEY)).body.error?.code).toBe(-32001);
    expect((await jsonRpc(t, "tasks/get", { id: "nope" })).status).toBe(401);
  });

  it("Connect over HTTPS/1.1 takes the certificate through the interceptor", async () => {
    const call = (identity: Issued) =>
      request(`${t.baseUrl}/a2a.v1.A2AService/GetTask`, {
        method: "POST",
        dispatcher: agentFor(identity),
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "tasks/nope" }),
      });
    const mapped = await call(billing);
    expect(mapped.statusCode).toBe(404);
    expect(((await mapped.body.json()) as any).code).toBe("not_found");
    const unmapped = await call(stranger);
    expect(unmapped.statusCode).toBe(401);
    expect(await unmapped.body.json()).toEqual({
      code: "unauthenticated",
      message: "the client certificate is not mapped to a principal",
    });
  });

  it("@grpc/grpc-js over TLS (ALPN h2) with a client certificate", async () => {
    const mapped = grpcClient(t, billing);
    const unmapped = grpcClient(t, stranger);
    const anonymous = grpcClient(t);
    try {
      expect((await grpcGetTask(mapped, "tasks/nope")).code).toBe(grpc.status.NOT_FOUND);
      expect(await grpcGetTask(unmapped, "tasks/nope")).toEqual({
        code: grpc.status.UNAUTHENTICATED,
        details: "the client certificate is not mapped to a principal",
      });
      expect((await grpcGetTask(anonymous, "tasks/nope")).code).toBe(grpc.status.UNAUTHENTICATED);
    } finally {
      for (const c of [mapped, unmapped, anonymous]) c.close();
    }
  });

  it("@a2a-js/sdk with a fetch that presents the client certificate", async () => {
    const dispatcher = agentFor(billing);
    const fetchImpl = ((input: string | URL, init?: RequestInit) =>
      undiciFetch(input, { ...(init as object), dispatcher })) as unknown as typeof fetch;
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      preferredTransports: ["JSONRPC"],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    });
    const sdk: Client = await factory.createFromUrl(t.baseUrl);
    const result = await sdk.sendMessage({
      tenant: "",
      message: {
        messageId: randomUUID(),
        contextId: "",
        taskId: "",
        role: 1,
        parts: [
          { content: { $case: "text", value: "sdk over mTLS" }, metadata: undefined, filename: "", mediaType: "" },
        ],
        metadata: { skillId: "echo" },
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    });
    expect("status" in result && result.status?.state).toBe(3);
  });
});

describe("mutual TLS, TLS_CLIENT_AUTH=required", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(tlsEnv({ TLS_CLIENT_AUTH: "required" }));
  });
  afterAll(() => t.close());

  it("refuses the handshake without a certificate the client CA verifies; a mapped one works", async () => {
    for (const identity of [undefined, impostor, expired]) {
      await expect(
        jsonRpc(t, "tasks/get", { id: "nope" }, identity, KEY),
        identity?.certFile ?? "no certificate",
      ).rejects.toThrow();
    }
    expect((await jsonRpc(t, "tasks/get", { id: "nope" }, billing)).body.error?.code).toBe(-32001);
    // Verified but unmapped: the handshake passes, the certificate grants nothing, the API key still counts.
    expect((await jsonRpc(t, "tasks/get", { id: "nope" }, stranger)).status).toBe(401);
    expect((await jsonRpc(t, "tasks/get", { id: "nope" }, stranger, KEY)).body.error?.code).toBe(-32001);
  });
});

describe("TLS without client certificates, and rotation", () => {
  let t: TestApp;
  const live = { certFile: join(certs.dir, "live.crt"), keyFile: join(certs.dir, "live.key") };
  beforeAll(async () => {
    copyFileSync(server.certFile, live.certFile);
    copyFileSync(server.keyFile, live.keyFile);
    t = await startTestApp({
      WORKFLOWS_DIR: TEST_WORKFLOWS_DIR,
      TLS_CERT_FILE: live.certFile,
      TLS_KEY_FILE: live.keyFile,
      TLS_RELOAD_INTERVAL_MS: "100",
    });
  });
  afterAll(() => t.close());

  function servedFingerprint(): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = tlsConnect(
        { host: "127.0.0.1", port: t.port, ca: serverCa.cert, ALPNProtocols: ["http/1.1"] },
        () => {
          resolve(socket.getPeerCertificate().fingerprint256);
          socket.end();
        },
      );
      socket.on("error", reject);
    });
  }

  it("serves the card over HTTPS with an https URL", async () => {
    const res = await request(`${t.baseUrl}/.well-known/agent-card.json`, { dispatcher: agentFor() });
    expect(res.statusCode).toBe(200);
    expect(((await res.body.json()) as any).url).toMatch(/^https:\/\/127\.0\.0\.1:/);
  });

  it("rewritten certificate and key files are served on new connections without a restart", async () => {
    const before = await servedFingerprint();
    const next = certs.leaf("server-next", serverCa, "/CN=localhost", { san: "DNS:localhost,IP:127.0.0.1" });
    copyFileSync(next.keyFile, live.keyFile);
    copyFileSync(next.certFile, live.certFile);
    const { X509Certificate } = await import("node:crypto");
    const wanted = new X509Certificate(next.cert).fingerprint256;
    expect(wanted).not.toBe(before);
    let served = before;
    for (let i = 0; i < 100 && served !== wanted; i++) {
      await new Promise((r) => setTimeout(r, 50));
      served = await servedFingerprint();
    }
    expect(served).toBe(wanted);
  });
});

describe("TLS_CLIENT_PRINCIPALS without API keys, and SIGHUP", () => {
  let t: TestApp;
  const live = { certFile: join(certs.dir, "hup.crt"), keyFile: join(certs.dir, "hup.key") };
  beforeAll(async () => {
    copyFileSync(server.certFile, live.certFile);
    copyFileSync(server.keyFile, live.keyFile);
    // The periodic check is a day away: only SIGHUP can pick up the new files in this test.
    t = await startTestApp(
      tlsEnv({
        API_KEYS: "",
        TLS_CERT_FILE: live.certFile,
        TLS_KEY_FILE: live.keyFile,
        TLS_RELOAD_INTERVAL_MS: "86400000",
      }),
    );
  });
  afterAll(() => t.close());

  it("mapped certificates alone turn authentication on", async () => {
    const card = (await (
      await request(`${t.baseUrl}/.well-known/agent-card.json`, { dispatcher: agentFor() })
    ).body.json()) as any;
    expect(card.securitySchemes).toEqual({ mtls: expect.objectContaining({ type: "mutualTLS" }) });
    expect(card.security).toEqual([{ mtls: [] }]);
    const none = await jsonRpc(t, "tasks/get", { id: "nope" });
    expect([none.status, none.body.error?.message]).toEqual([401, "missing credentials: present a client certificate"]);
    const unmapped = await jsonRpc(t, "tasks/get", { id: "nope" }, stranger);
    expect([unmapped.status, unmapped.body.error?.message]).toEqual([
      401,
      "the client certificate is not mapped to a principal",
    ]);
    expect((await jsonRpc(t, "tasks/get", { id: "nope" }, billing)).body.error?.code).toBe(-32001);
  });

  it("SIGHUP re-reads the files at once", async () => {
    const next = certs.leaf("server-hup", serverCa, "/CN=localhost", { san: "DNS:localhost,IP:127.0.0.1" });
    copyFileSync(next.keyFile, live.keyFile);
    copyFileSync(next.certFile, live.certFile);
    const { X509Certificate } = await import("node:crypto");
    const wanted = new X509Certificate(next.cert).fingerprint256;
    const served = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = tlsConnect(
          { host: "127.0.0.1", port: t.port, ca: serverCa.cert, ALPNProtocols: ["http/1.1"] },
          () => {
            resolve(socket.getPeerCertificate().fingerprint256);
            socket.end();
          },
        );
        socket.on("error", reject);
      });
    expect(await served()).not.toBe(wanted);
    // The listeners the host registered, as the signal would call them (no real signal to the test runner).
    process.emit("SIGHUP" as never);
    expect(await served()).toBe(wanted);
  });
});
