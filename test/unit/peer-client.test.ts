// The peer client's dispatch and credentials without a network: a recording PeerHttpClient and gRPC transport.
// Checked: endpoints recorded by an older host (a bare JSON-RPC URL, `grpc+https://…`) still go to 0.3 over the
// same wire; 1.0 JSON-RPC and HTTP+JSON request shapes (PascalCase methods, ProtoJSON, A2A-Version, the tenant);
// a named peer's credentials on every call, looked up by name (a peer removed from configuration fails clearly);
// and the peers configuration (JSON and YAML file), whose credentials never print.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { peerVersions } from "../../src/a2a/versions.js";
import { createA2APeerClient } from "../../src/peer/a2a-peer-client.js";
import { readPeersConfig, type PeerConfig } from "../../src/peer/peer-config.js";
import { PeerCallError, type PeerHttpClient, type PeerHttpRequest } from "../../src/peer/peer-http-client.js";
import type { PeerTransport } from "../../src/peer/peer-types.js";
import type { PeerVersionClient } from "../../src/peer/peer-version.js";

const V03_TASK = { kind: "task", id: "t1", contextId: "c1", status: { state: "working" } };
const V10_TASK = {
  id: "t1",
  contextId: "c1",
  status: {
    state: "TASK_STATE_INPUT_REQUIRED",
    message: { messageId: "m1", role: "ROLE_AGENT", parts: [{ text: "which?" }] },
  },
};

function recordingHttp(answer: (req: PeerHttpRequest) => { status?: number; body: unknown }): {
  http: PeerHttpClient;
  requests: PeerHttpRequest[];
} {
  const requests: PeerHttpRequest[] = [];
  return {
    requests,
    http: {
      async request(req) {
        requests.push(req);
        const { status = 200, body } = answer(req);
        if (status >= 400 && req.returnErrorStatus !== true)
          throw new PeerCallError(`answered HTTP ${status}`, "http", false);
        return { status, contentType: "application/json", body: JSON.stringify(body) };
      },
      async close() {},
    },
  };
}

function recordingGrpc(): {
  grpc: PeerTransport;
  calls: Array<{ endpoint: string; headers?: Readonly<Record<string, string>> }>;
} {
  const calls: Array<{ endpoint: string; headers?: Readonly<Record<string, string>> }> = [];
  const task = { id: "t1", contextId: "c1", state: "working", artifacts: [], history: [] };
  return {
    calls,
    grpc: {
      send: async (endpoint, _m, o) => (
        calls.push({ endpoint, ...(o?.headers ? { headers: o.headers } : {}) }),
        { kind: "task", task }
      ),
      getTask: async (endpoint, _t, o) => (
        calls.push({ endpoint, ...(o?.headers ? { headers: o.headers } : {}) }),
        task
      ),
      cancelTask: async (endpoint, _t, o) => (
        calls.push({ endpoint, ...(o?.headers ? { headers: o.headers } : {}) }),
        task
      ),
      close: async () => {},
    },
  };
}

function peersOf(json: unknown): Map<string, PeerConfig> {
  const problems: string[] = [];
  const peers = readPeersConfig(JSON.stringify(json), undefined, (m) => problems.push(m));
  expect(problems).toEqual([]);
  return peers;
}

const jsonRpcBody = (req: PeerHttpRequest) =>
  JSON.parse(req.body ?? "{}") as { method: string; params: Record<string, unknown> };

describe("peer client dispatch", () => {
  it("endpoints recorded by an older host read as 0.3 over the same wire", async () => {
    const { http, requests } = recordingHttp(() => ({ body: { jsonrpc: "2.0", id: 1, result: V03_TASK } }));
    const { grpc, calls } = recordingGrpc();
    const client = createA2APeerClient({ http, grpc, versions: peerVersions(), requestTimeoutMs: 1000 });
    const task = await client.getTask({ endpoint: "https://peer.example/a2a/jsonrpc" }, "t1");
    expect(task.state).toBe("working");
    expect(requests[0]).toMatchObject({
      method: "POST",
      url: "https://peer.example/a2a/jsonrpc",
      headers: { "a2a-version": "0.3" },
    });
    expect(jsonRpcBody(requests[0]!)).toMatchObject({ method: "tasks/get", params: { id: "t1" } });
    await client.getTask({ endpoint: "grpc+https://peer.example:8443" }, "t1");
    expect(calls).toEqual([{ endpoint: "grpc+https://peer.example:8443", headers: {} }]);
  });

  it("1.0 JSON-RPC: PascalCase methods, ProtoJSON params and result, A2A-Version 1.0, the named peer's bearer token", async () => {
    const { http, requests } = recordingHttp(() => ({ body: { jsonrpc: "2.0", id: 1, result: V10_TASK } }));
    const client = createA2APeerClient({
      http,
      grpc: recordingGrpc().grpc,
      versions: peerVersions(),
      requestTimeoutMs: 1000,
      peers: peersOf({ p: { cardUrl: "https://peer.example/card", credentials: { bearer: "tok-123" } } }),
    });
    const task = await client.getTask(
      { endpoint: "jsonrpc+1.0+https://peer.example/a2a#tenant=acme", peer: "p" },
      "t1",
    );
    expect(task).toMatchObject({
      id: "t1",
      state: "input-required",
      statusMessage: { messageId: "m1", role: "agent", parts: [{ kind: "text", text: "which?" }] },
    });
    expect(requests[0]).toMatchObject({
      url: "https://peer.example/a2a",
      headers: { "a2a-version": "1.0", authorization: "Bearer tok-123" },
    });
    expect(jsonRpcBody(requests[0]!)).toEqual({
      jsonrpc: "2.0",
      id: expect.any(String),
      method: "GetTask",
      params: { tenant: "acme", id: "t1", historyLength: 2147483647 },
    });
  });

  it("1.0 HTTP+JSON: the tenant's path, application/a2a+json, the API key in the header the card named", async () => {
    const { http, requests } = recordingHttp(() => ({ body: { task: V10_TASK } }));
    const client = createA2APeerClient({
      http,
      grpc: recordingGrpc().grpc,
      versions: peerVersions(),
      requestTimeoutMs: 1000,
      peers: peersOf({ p: { cardUrl: "https://peer.example/card", credentials: { apiKey: "key-456" } } }),
    });
    const reply = await client.send(
      { endpoint: "http+json+1.0+https://peer.example/base/#tenant=acme", peer: "p", apiKeyHeader: "X-Key" },
      { messageId: "m", role: "user", parts: [{ kind: "text", text: "hi" }] },
    );
    expect(reply.kind).toBe("task");
    expect(requests[0]).toMatchObject({
      method: "POST",
      url: "https://peer.example/base/acme/message:send",
      headers: { "content-type": "application/a2a+json", "a2a-version": "1.0", "x-key": "key-456" },
    });
    expect(JSON.parse(requests[0]!.body!)).toMatchObject({
      tenant: "acme",
      message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "hi" }] },
      configuration: { returnImmediately: true },
    });
  });

  it("HTTP 401 says the credentials were refused and is final; a peer removed from configuration fails clearly", async () => {
    const { http } = recordingHttp(() => ({ status: 401, body: { error: { code: 401, message: "invalid API key" } } }));
    const client = createA2APeerClient({
      http,
      grpc: recordingGrpc().grpc,
      versions: peerVersions(),
      requestTimeoutMs: 1000,
      peers: peersOf({ p: { cardUrl: "https://peer.example/card", credentials: { bearer: "tok" } } }),
    });
    const refused = await client
      .getTask({ endpoint: "http+json+1.0+https://peer.example/", peer: "p" }, "t1")
      .catch((e: unknown) => e as PeerCallError);
    expect(refused).toMatchObject({ kind: "unauthorized", retryable: false });
    expect((refused as Error).message).toBe(
      "https://peer.example answered HTTP 401 Unauthorized (the credentials for this peer are missing or wrong): invalid API key",
    );
    const gone = await client
      .getTask({ endpoint: "http+json+1.0+https://peer.example/", peer: "removed" }, "t1")
      .catch((e: unknown) => e as PeerCallError);
    expect((gone as Error).message).toBe('no peer named "removed" is configured (A2A_PEERS; configured: p)');
  });
});

describe("peer client: our push callback registered inline with a send", () => {
  const message = { messageId: "m", role: "user" as const, parts: [{ kind: "text" as const, text: "hi" }] };
  const callback = "https://us.example/v1/peer-callbacks/our-task";
  // A peer that signs its pushes (keys configured) is asked for a Bearer JWT: Bearer without credentials, the
  // token in `token` only; a static-bearer peer gets the token as its Bearer credentials too (peer-push-auth.ts).
  const cases = [
    { push: { url: callback, token: "tok" }, auth10: { scheme: "Bearer" }, auth03: { schemes: ["Bearer"] } },
    {
      push: { url: callback, token: "tok", credentials: "tok" },
      auth10: { scheme: "Bearer", credentials: "tok" },
      auth03: { schemes: ["Bearer"], credentials: "tok" },
    },
  ];

  for (const { push, auth10, auth03 } of cases) {
    const what = push.credentials
      ? "with the token as static Bearer credentials"
      : "Bearer without credentials (the peer signs a JWT)";
    it(`1.0 JSON-RPC, 0.3 JSON-RPC and 0.3 HTTP+JSON: ${what}`, async () => {
      const { http, requests } = recordingHttp((req) => ({
        body: req.url.endsWith("message:send")
          ? { task: V10_TASK }
          : { jsonrpc: "2.0", id: 1, result: req.headers?.["a2a-version"] === "1.0" ? { task: V10_TASK } : V03_TASK },
      }));
      const client = createA2APeerClient({
        http,
        grpc: recordingGrpc().grpc,
        versions: peerVersions(),
        requestTimeoutMs: 1000,
      });
      await client.send({ endpoint: "jsonrpc+1.0+https://peer.example/a2a" }, message, undefined, push);
      await client.send({ endpoint: "jsonrpc+0.3+https://peer.example/a2a" }, message, undefined, push);
      await client.send({ endpoint: "http+json+0.3+https://peer.example/" }, message, undefined, push);
      expect(jsonRpcBody(requests[0]!).params["configuration"]).toMatchObject({
        taskPushNotificationConfig: { url: callback, token: "tok", authentication: auth10 },
      });
      expect(
        (jsonRpcBody(requests[0]!).params["configuration"] as Record<string, any>)["taskPushNotificationConfig"][
          "authentication"
        ],
      ).toEqual(auth10);
      expect(jsonRpcBody(requests[1]!).params["configuration"]).toEqual({
        blocking: false,
        pushNotificationConfig: { url: callback, token: "tok", authentication: auth03 },
      });
      expect(JSON.parse(requests[2]!.body!)["configuration"]).toEqual({
        pushNotification: { url: callback, token: "tok", authentication: auth03 },
      });
    });
  }
});

describe("peer client: every version's wire comes from its module's client half", () => {
  // A stand-in 1.0 client half with other method names, media type and stream bindings: the transports must
  // send and read exactly what the version says, and name nothing themselves (adding a version adds no branch).
  const v10 = peerVersions().find((v) => v.version === "1.0")!;
  const altered: PeerVersionClient = {
    ...v10,
    streams: new Set(["jsonrpc"]),
    jsonRpc: {
      ...v10.jsonRpc,
      methods: { ...v10.jsonRpc.methods, get: "tasks.fetch" },
      getParams: (taskId, tenant) => ({ task: taskId, space: tenant }),
    },
    rest: { ...v10.rest, mediaType: "application/x-test+json", prefix: (tenant) => `/t/${tenant ?? "-"}` },
  };
  const versions = peerVersions().map((v) => (v.version === "1.0" ? altered : v));

  it("JSON-RPC: the method name and params the version builds; the version's reader reads the result", async () => {
    const { http, requests } = recordingHttp(() => ({ body: { jsonrpc: "2.0", id: 1, result: V10_TASK } }));
    const client = createA2APeerClient({ http, grpc: recordingGrpc().grpc, versions, requestTimeoutMs: 1000 });
    const task = await client.getTask({ endpoint: "jsonrpc+1.0+https://peer.example/a2a#tenant=acme" }, "t1");
    expect(task.state).toBe("input-required");
    expect(jsonRpcBody(requests[0]!)).toMatchObject({ method: "tasks.fetch", params: { task: "t1", space: "acme" } });
  });

  it("HTTP+JSON: the version's path prefix and media type; streams only over the bindings the version lists", async () => {
    const { http, requests } = recordingHttp(() => ({ body: V10_TASK }));
    const client = createA2APeerClient({ http, grpc: recordingGrpc().grpc, versions, requestTimeoutMs: 1000 });
    await client.cancelTask({ endpoint: "http+json+1.0+https://peer.example/base#tenant=acme" }, "t1");
    expect(requests[0]).toMatchObject({
      url: "https://peer.example/base/t/acme/tasks/t1:cancel",
      headers: { "content-type": "application/x-test+json", "a2a-version": "1.0" },
    });
    expect(client.canStream!({ endpoint: "jsonrpc+1.0+https://peer.example/a2a" })).toBe(true);
    expect(client.canStream!({ endpoint: "http+json+1.0+https://peer.example/base" })).toBe(false);
    expect(client.canStream!({ endpoint: "grpc+1.0+https://peer.example:443" })).toBe(false);
    // The registry's own halves: 1.0 streams on every binding, 0.3 over JSON-RPC only.
    const registry = createA2APeerClient({
      http,
      grpc: recordingGrpc().grpc,
      versions: peerVersions(),
      requestTimeoutMs: 1000,
    });
    expect(
      [
        "jsonrpc+1.0+https://p.example/a",
        "http+json+1.0+https://p.example/",
        "grpc+1.0+https://p.example:443",
        "jsonrpc+0.3+https://p.example/a",
        "http+json+0.3+https://p.example/",
        "grpc+0.3+https://p.example:443",
      ].map((endpoint) => registry.canStream!({ endpoint })),
    ).toEqual([true, true, true, true, false, false]);
  });

  it("the registry lists the client halves newest first (the order a card's interfaces are preferred in)", () => {
    expect(peerVersions().map((v) => v.version)).toEqual(["1.0", "0.3"]);
  });
});

describe("peers configuration", () => {
  it("reads a YAML file; credentials are secret values that never print", async () => {
    const dir = await mkdtemp(join(tmpdir(), "peers-"));
    const file = join(dir, "peers.yaml");
    await writeFile(
      file,
      'billing:\n  cardUrl: https://billing.example/.well-known/agent-card.json\n  binding: grpc\n  protocolVersion: "1.0"\n  credentials: { bearer: "very-secret-token" }\n',
    );
    const problems: string[] = [];
    const peers = readPeersConfig(undefined, file, (m) => problems.push(m));
    expect(problems).toEqual([]);
    const billing = peers.get("billing")!;
    expect(billing).toMatchObject({
      name: "billing",
      binding: "grpc",
      protocolVersion: "1.0",
      credentials: { kind: "bearer" },
    });
    expect(JSON.stringify(billing)).not.toContain("very-secret-token");
    expect(inspect(billing, { depth: 5 })).not.toContain("very-secret-token");
    expect(billing.credentials?.kind === "bearer" && billing.credentials.token.reveal()).toBe("very-secret-token");
  });

  it("refuses both sources at once, an API key without a header for a card-less peer, and a reserved header", () => {
    const problems: string[] = [];
    readPeersConfig("{}", "/x.yaml", (m) => problems.push(m));
    readPeersConfig(
      JSON.stringify({
        a: {
          url: "https://a.example/rpc",
          binding: "jsonrpc",
          protocolVersion: "1.0",
          credentials: { apiKey: "k-secret" },
        },
        b: { cardUrl: "https://b.example", credentials: { apiKey: "k-secret", header: "Content-Type" } },
      }),
      undefined,
      (m) => problems.push(m),
    );
    expect(problems).toEqual([
      "set A2A_PEERS or A2A_PEERS_FILE, not both",
      'A2A_PEERS: peer "a": credentials.header is required for an API key to a peer without a card (the card would name the header)',
      'A2A_PEERS: peer "b": credentials.header must be an HTTP header name (not one the wire sets itself)',
    ]);
  });
});
