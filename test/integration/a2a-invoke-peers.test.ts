// Named peers and every wire: two hosts of ours on loopback. The peer host requires an API key (API_KEYS);
// the caller host names it several times in A2A_PEERS, once per binding it is pinned to, with credentials.
// Checked: the caller speaks A2A 1.0 over JSON-RPC, gRPC and HTTP+JSON (the hybrid card offers 1.0 first), and
// 0.3 when a card offers only 0.3 (a small card server pointing at the peer host's 0.3 endpoints), with bearer
// and API-key credentials (the key's header read off the card); a caller's answer to the peer's question is
// forwarded over 1.0; our cancel cancels the peer's task; a wrong or missing credential fails the node with a
// clear message (401 from the peer); a pinned version the peer does not offer fails with a clear message; a
// workflow naming unknown peers is refused at load, listing them all; credentials appear in no task record,
// event and log line. And ours calling an @a2a-js/sdk 1.3 server over 1.0 JSON-RPC.
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { createRemoteJWKSet, decodeProtectedHeader, flattenedVerify } from "jose";
import { createServer, type Server } from "node:http";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import type { WorkflowLoadError } from "../../src/engine/workflow-catalog.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { startTestPeer, type TestPeer } from "../support/a2a-peer.js";
import { freePort, TEST_BUILTIN_WORKFLOWS } from "../support/server-process.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { jsonRpcCaller, type WireTask } from "../support/jsonrpc-caller.js";

const KEY = "peer-caller-key-0123456789abcdef";
const WRONG_KEY = "not-the-peer-key-0123456789abcdef";
const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];

const FAST = {
  A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
  A2A_PEER_POLL_MS: "25",
  A2A_PEER_RETRY_BASE_MS: "20",
  A2A_PEER_RETRY_MAX_MS: "40",
  A2A_PEER_MAX_ATTEMPTS: "3",
  A2A_PEER_REQUEST_TIMEOUT_MS: "3000",
  BLOCKING_TIMEOUT_MS: "5000",
};

async function workflowDir(peerSkills: Record<string, { skillId: string; message?: string }>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "a2a-invoke-peers-"));
  for (const [peer, { skillId, message }] of Object.entries(peerSkills)) {
    const node = { kind: "a2a.invoke", id: "call", peer, skillId, ...(message !== undefined ? { message } : {}) };
    await writeFile(
      join(dir, `call-${peer}.json`),
      JSON.stringify({
        id: `call-${peer}`,
        name: `Call ${peer}`,
        description: `Calls the peer named ${peer}.`,
        nodes: [node],
      }),
    );
  }
  return dir;
}

/** An HTTP server on loopback answering every request with `card`. */
async function staticCard(card: Record<string, unknown>, servers: Server[]): Promise<string> {
  const server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(card)),
  );
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/agent-card.json`;
}

/** A host like startTestApp's, whose log lines (at debug) are kept for inspection. */
async function startLoggedApp(
  env: Record<string, string>,
  store = new MemoryTaskStore(),
): Promise<{ baseUrl: string; app: App; store: MemoryTaskStore; logs: () => string; close(): Promise<void> }> {
  const port = await freePort();
  const config = loadConfig({
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: "debug",
    TIMER_POLL_MS: "50",
    SHUTDOWN_GRACE_MS: "1000",
    BUILTIN_WORKFLOWS: TEST_BUILTIN_WORKFLOWS,
    ...env,
  });
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const app = await createApp({ config, logger: createLogger(config.logLevel, sink), store, durableStore: false });
  await app.listen();
  return { baseUrl: `http://127.0.0.1:${port}`, app, store, logs: () => lines.join(""), close: () => app.close() };
}

const terminal = (task: WireTask) => ["completed", "failed", "canceled", "rejected"].includes(task["status"].state);

describe("a2a.invoke to named peers: A2A 1.0 and 0.3 over every binding, with credentials", () => {
  let peerHost: TestApp;
  let caller: Awaited<ReturnType<typeof startLoggedApp>>;
  let sdkPeer: TestPeer;
  const servers: Server[] = [];
  let mongo: MongoClient;
  let callerEnv: Record<string, string>;
  const dbName = `peers_${randomUUID().slice(0, 8)}`;
  const ours = jsonRpcCaller(() => caller.baseUrl, { blocking: false });
  const onPeer = jsonRpcCaller(() => peerHost.baseUrl, { key: KEY, blocking: false });

  beforeAll(async () => {
    // The peer host keeps durable tasks (MongoDB), so it takes a 1.0 `returnImmediately` send.
    mongo = await MongoClient.connect(inject("mongoUri"));
    const store = new MongoTaskStore(mongo, mongo.db(dbName));
    await store.init();
    peerHost = await startTestApp(
      { API_KEYS: JSON.stringify([{ id: "caller", tenant: "acme", scopes: ALL, key: KEY }]) },
      store,
    );
    sdkPeer = await startTestPeer({ v10: true });
    const cardUrl = `${peerHost.baseUrl}/.well-known/agent-card.json`;
    // The peer host as an A2A 0.3-only agent would describe it: 0.3 JSON-RPC and HTTP+JSON, an API key in X-API-Key.
    const v03Card = await staticCard(
      {
        protocolVersion: "0.3.0",
        name: "Peer host (0.3 only)",
        description: "Our peer host, as a 0.3-only card",
        url: `${peerHost.baseUrl}/a2a/jsonrpc`,
        preferredTransport: "JSONRPC",
        additionalInterfaces: [
          { url: `${peerHost.baseUrl}/a2a/jsonrpc`, transport: "JSONRPC" },
          { url: peerHost.baseUrl, transport: "HTTP+JSON" },
        ],
        version: "1.0.0",
        capabilities: { streaming: false, pushNotifications: false },
        securitySchemes: { key: { type: "apiKey", in: "header", name: "X-API-Key" } },
        security: [{ key: [] }],
        defaultInputModes: ["text/plain"],
        defaultOutputModes: ["text/plain"],
        skills: [],
      },
      servers,
    );
    // Signed cards (cardSignature: required): the peer host's 1.0 card carries an AgentCardSignature.
    const signedCardUrl = `${peerHost.baseUrl}/.well-known/agent-card.json?A2A-Version=1.0`;
    const jwksUrl = `${peerHost.baseUrl}/.well-known/jwks.json`;
    const pinned = (await (await fetch(jwksUrl)).json()) as { keys: Array<Record<string, unknown>> };
    const otherKeys = {
      keys: [{ ...generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" }), kid: pinned.keys[0]!["kid"] }],
    };
    const signedCard = (await (await fetch(signedCardUrl)).json()) as Record<string, unknown>;
    const tamperedCard = await staticCard({ ...signedCard, description: "Not what the peer signed" }, servers);
    const peers = {
      signed: { cardUrl: signedCardUrl, cardSignature: "required", jwksUrl, credentials: { bearer: KEY } },
      "signed-pinned": {
        cardUrl: signedCardUrl,
        cardSignature: "required",
        jwks: pinned,
        credentials: { bearer: KEY },
      },
      "signed-other-keys": {
        cardUrl: signedCardUrl,
        cardSignature: "required",
        jwks: otherKeys,
        credentials: { bearer: KEY },
      },
      "signed-tampered": { cardUrl: tamperedCard, cardSignature: "required", jwksUrl, credentials: { bearer: KEY } },
      "signed-unsigned": { cardUrl: v03Card, cardSignature: "required", jwksUrl, credentials: { apiKey: KEY } },
      "jsonrpc-10": { cardUrl, binding: "jsonrpc", credentials: { bearer: KEY } },
      "grpc-10": { cardUrl, binding: "grpc", credentials: { bearer: KEY } },
      "rest-10": { cardUrl, binding: "http+json", credentials: { apiKey: KEY, header: "X-API-Key" } },
      "only-03": { cardUrl: v03Card, credentials: { apiKey: KEY } },
      "only-03-rest": { cardUrl: v03Card, binding: "http+json", credentials: { bearer: KEY } },
      "pinned-10": { cardUrl: v03Card, protocolVersion: "1.0", credentials: { bearer: KEY } },
      "wrong-key": { cardUrl, credentials: { bearer: WRONG_KEY } },
      "wrong-key-grpc": { cardUrl, binding: "grpc", credentials: { bearer: WRONG_KEY } },
      "no-key": { cardUrl },
      "no-card": {
        url: `${peerHost.baseUrl}/a2a/jsonrpc`,
        binding: "jsonrpc",
        protocolVersion: "1.0",
        credentials: { bearer: KEY },
      },
      sdk: { cardUrl: sdkPeer.cardUrl },
    };
    const echo = { skillId: "echo" };
    const dir = await workflowDir({
      signed: echo,
      "signed-pinned": echo,
      "signed-other-keys": echo,
      "signed-tampered": echo,
      "signed-unsigned": echo,
      "jsonrpc-10": echo,
      "grpc-10": echo,
      "rest-10": echo,
      "only-03": echo,
      "only-03-rest": echo,
      "pinned-10": echo,
      "wrong-key": echo,
      "wrong-key-grpc": echo,
      "no-key": echo,
      "no-card": echo,
      sdk: { skillId: "scripted" },
    });
    await writeFile(
      join(dir, "ask-peer.json"),
      JSON.stringify({
        id: "ask-peer",
        name: "Ask peer",
        description: "The peer asks us a question.",
        nodes: [{ kind: "a2a.invoke", id: "call", peer: "jsonrpc-10", skillId: "clarify" }],
      }),
    );
    await writeFile(
      join(dir, "ask-peer-grpc.json"),
      JSON.stringify({
        id: "ask-peer-grpc",
        name: "Ask peer (gRPC)",
        description: "The peer asks us a question, over gRPC.",
        nodes: [{ kind: "a2a.invoke", id: "call", peer: "grpc-10", skillId: "clarify" }],
      }),
    );
    await writeFile(
      join(dir, "ask-peer-rest.json"),
      JSON.stringify({
        id: "ask-peer-rest",
        name: "Ask peer (REST)",
        description: "The peer asks us a question, over HTTP+JSON.",
        nodes: [{ kind: "a2a.invoke", id: "call", peer: "rest-10", skillId: "clarify" }],
      }),
    );
    callerEnv = { ...FAST, WORKFLOWS_DIR: dir, A2A_PEERS: JSON.stringify(peers) };
    caller = await startLoggedApp(callerEnv);
  });

  afterAll(async () => {
    await caller?.close();
    await peerHost?.close();
    await sdkPeer?.close();
    for (const s of servers) s.close();
    await mongo?.db(dbName).dropDatabase();
    await mongo?.close();
  });

  const progressOf = async (runId: string): Promise<Array<Record<string, any>>> =>
    (await caller.store.readEvents(runId, 0))
      .filter((e) => e.type === "node.progress")
      .map((e) => (e.payload as { progress: Record<string, any> }).progress);

  /** Runs `call-<peer>` to its end; the peer host's echo answers with the text it was sent. */
  async function callPeer(
    peer: string,
    text = `hello ${peer}`,
  ): Promise<{ task: WireTask; progress: Array<Record<string, any>> }> {
    const started = await ours.start(text, `call-${peer}`);
    const task = await ours.waitFor(started["id"], terminal, "a terminal state");
    return { task, progress: await progressOf(task["id"]) };
  }

  for (const [peer, endpoint] of [
    ["jsonrpc-10", () => `jsonrpc+1.0+${peerHost.baseUrl}/a2a/jsonrpc`],
    ["grpc-10", () => `grpc+1.0+${peerHost.baseUrl}/`],
    ["rest-10", () => `http+json+1.0+${peerHost.baseUrl}/`],
  ] as const) {
    it(`A2A 1.0 over ${peer.replace("-10", "")} (pinned binding): the peer's echo comes back as our artifact, tagged untrusted`, async () => {
      const { task, progress } = await callPeer(peer);
      expect(task["status"].state, JSON.stringify(task["metadata"]?.["openwop"])).toBe("completed");
      expect(progress[0]).toMatchObject({ endpoint: endpoint(), peer });
      const artifact = task["artifacts"][0];
      expect(JSON.stringify(artifact.parts)).toContain(`hello ${peer}`);
      expect(artifact.metadata).toMatchObject({
        contentTrust: "untrusted",
        a2aPeer: { agentCardUrl: `${peerHost.baseUrl}/.well-known/agent-card.json` },
      });
      // The peer's task exists, in the key's tenant, and completed.
      const peerTask = await onPeer.get(progress[0]!["peerTaskId"]);
      expect(peerTask["status"].state).toBe("completed");
    });
  }

  it("A2A 0.3 when the card offers only 0.3: JSON-RPC with the API key in the header the card names; HTTP+JSON (/v1) when pinned", async () => {
    const jsonRpc = await callPeer("only-03");
    expect(jsonRpc.task["status"].state, JSON.stringify(jsonRpc.task["metadata"]?.["openwop"])).toBe("completed");
    expect(jsonRpc.progress[0]).toMatchObject({
      endpoint: `jsonrpc+0.3+${peerHost.baseUrl}/a2a/jsonrpc`,
      peer: "only-03",
      apiKeyHeader: "X-API-Key",
    });
    const rest = await callPeer("only-03-rest");
    expect(rest.task["status"].state, JSON.stringify(rest.task["metadata"]?.["openwop"])).toBe("completed");
    expect(rest.progress[0]).toMatchObject({ endpoint: `http+json+0.3+${peerHost.baseUrl}/`, peer: "only-03-rest" });
    expect(JSON.stringify(rest.task["artifacts"][0].parts)).toContain("hello only-03-rest");
  });

  it("a peer without a card is called at its configured url, version and binding", async () => {
    const { task, progress } = await callPeer("no-card");
    expect(task["status"].state, JSON.stringify(task["metadata"]?.["openwop"])).toBe("completed");
    expect(progress[0]).toMatchObject({ endpoint: `jsonrpc+1.0+${peerHost.baseUrl}/a2a/jsonrpc`, peer: "no-card" });
  });

  for (const [peer, binding] of [
    ["jsonrpc-10", "JSON-RPC"],
    ["grpc-10", "gRPC"],
    ["rest-10", "HTTP+JSON"],
  ] as const) {
    it(`over 1.0 ${binding}: the peer's question becomes ours; our caller's answer is forwarded once and the peer completes`, async () => {
      const skill = peer === "jsonrpc-10" ? "ask-peer" : peer === "grpc-10" ? "ask-peer-grpc" : "ask-peer-rest";
      const started = await ours.start("Announce the new office hours", skill);
      const waiting = await ours.waitFor(
        started["id"],
        (t) => t["status"].state === "input-required" || terminal(t),
        "input-required",
      );
      expect(waiting["status"].state, JSON.stringify(waiting["metadata"]?.["openwop"])).toBe("input-required");
      expect(JSON.stringify(waiting["status"].message)).toContain("Who is the audience for this message?");
      await ours.reply(waiting, "the night shift");
      const done = await ours.waitFor(started["id"], terminal, "a terminal state");
      expect(done["status"].state, JSON.stringify(done["metadata"]?.["openwop"])).toBe("completed");
      expect(JSON.stringify(done["artifacts"])).toContain("night shift");
      const progress = await progressOf(started["id"]);
      const peerTask = await onPeer.get(progress[0]!["peerTaskId"]);
      expect(peerTask["status"].state).toBe("completed");
      // Delivered exactly once: one user message with the answer in the peer's history.
      expect(
        peerTask["history"].filter(
          (m: any) => m.role === "user" && JSON.stringify(m.parts).includes("the night shift"),
        ),
      ).toHaveLength(1);
    });
  }

  it("our cancel cancels the peer's task (over 1.0 HTTP+JSON, with the credentials)", async () => {
    const started = await ours.start("Announce the new office hours", "ask-peer-rest");
    await ours.waitFor(started["id"], (t) => t["status"].state === "input-required", "input-required");
    const peerTaskId = (await progressOf(started["id"]))[0]!["peerTaskId"] as string;
    await ours.cancel(started["id"]);
    await onPeer.waitFor(peerTaskId, (t) => t["status"].state === "canceled", "canceled on the peer");
  });

  it("a wrong or missing credential fails the node with a clear message (401 from the peer, not retried)", async () => {
    for (const [peer, said] of [
      ["wrong-key", "HTTP 401 Unauthorized (the credentials for this peer are missing or wrong)"],
      ["no-key", "HTTP 401 Unauthorized (the credentials for this peer are missing or wrong)"],
      ["wrong-key-grpc", "gRPC status UNAUTHENTICATED (the credentials for this peer are missing or wrong)"],
    ] as const) {
      const { task } = await callPeer(peer);
      expect(task["status"].state).toBe("failed");
      const error = task["metadata"]["openwop"]["error"];
      expect(error.code).toBe("external_call_failed");
      expect(error.message).toContain(`calling peer "${peer}"`);
      expect(error.message).toContain(said);
      expect(error.message).not.toMatch(/failed \d+ times/);
    }
  });

  it("the 1.0 card is signed (A2A AgentCardSignature: detached JWS over the canonical card, kid and jku in the header), verifiable with the JWKS", async () => {
    const card = (await (
      await fetch(`${peerHost.baseUrl}/.well-known/agent-card.json?A2A-Version=1.0`)
    ).json()) as Record<string, any>;
    expect(card["signatures"]).toHaveLength(1);
    const [signature] = card["signatures"] as Array<{ protected: string; signature: string }>;
    const header = decodeProtectedHeader(signature!);
    const jwks = (await (await fetch(`${peerHost.baseUrl}/.well-known/jwks.json`)).json()) as {
      keys: Array<Record<string, unknown>>;
    };
    expect(header).toMatchObject({
      kid: jwks.keys[0]!["kid"],
      jku: `${peerHost.baseUrl}/.well-known/jwks.json`,
      typ: "JOSE",
    });
    // The payload is the card's canonical JSON without signatures: keys sorted at every level, no whitespace.
    const sorted = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sorted)
        : v && typeof v === "object"
          ? Object.fromEntries(
              Object.keys(v)
                .sort()
                .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
            )
          : v;
    const { signatures: _s, ...unsigned } = card;
    const payload = Buffer.from(JSON.stringify(sorted(unsigned))).toString("base64url");
    const keys = createRemoteJWKSet(new URL(header.jku!));
    await expect(flattenedVerify({ ...signature!, payload }, keys)).resolves.toBeDefined();
    await expect(
      flattenedVerify(
        {
          ...signature!,
          payload: Buffer.from(JSON.stringify(sorted({ ...unsigned, name: "forged" }))).toString("base64url"),
        },
        keys,
      ),
    ).rejects.toThrow();
    // The hybrid 0.3 card carries none (its signature would cover another document).
    expect(
      (
        (await (
          await fetch(`${peerHost.baseUrl}/.well-known/agent-card.json`, { headers: { "A2A-Version": "0.3" } })
        ).json()) as Record<string, unknown>
      )["signatures"],
    ).toBeUndefined();
  });

  it("cardSignature: required calls a peer whose card verifies (keys from jwksUrl or pinned) and refuses one that does not", async () => {
    for (const peer of ["signed", "signed-pinned"]) {
      const { task } = await callPeer(peer);
      expect(task["status"].state, peer).toBe("completed");
    }
    for (const [peer, said] of [
      [
        "signed-other-keys",
        `the agent card of peer "signed-other-keys" is refused: no signature verifies with the peer's keys`,
      ],
      [
        "signed-tampered",
        `the agent card of peer "signed-tampered" is refused: no signature verifies with the peer's keys`,
      ],
      ["signed-unsigned", `the agent card of peer "signed-unsigned" carries no signatures`],
    ] as const) {
      const { task } = await callPeer(peer);
      expect(task["status"].state, peer).toBe("failed");
      expect(task["metadata"]["openwop"]["error"].message, peer).toContain(said);
    }
  });

  it("a pinned version the peer does not offer fails the node, naming what the card offers (no silent downgrade)", async () => {
    const { task } = await callPeer("pinned-10");
    expect(task["status"].state).toBe("failed");
    expect(task["metadata"]["openwop"]["error"].message).toContain(
      "the remote agent does not offer A2A 1.0, which this peer is pinned to (its card offers: JSONRPC 0.3.0, HTTP+JSON 0.3.0)",
    );
  });

  it("ours calls an @a2a-js/sdk 1.3 server over A2A 1.0 JSON-RPC (SendMessage, GetTask; A2A-Version: 1.0)", async () => {
    const { task, progress } = await callPeer("sdk", "scenario:complete from ours");
    expect(task["status"].state, JSON.stringify(task["metadata"]?.["openwop"])).toBe("completed");
    expect(progress[0]).toMatchObject({ endpoint: `jsonrpc+1.0+${sdkPeer.baseUrl}/a2a/jsonrpc`, peer: "sdk" });
    expect(task["artifacts"].map((a: any) => a.artifactId)).toEqual(["call.report", "call.numbers"]);
    expect(task["artifacts"][1].parts).toEqual([{ kind: "data", data: { total: 42 } }]);
    const methods = new Set(sdkPeer.requests.map((r) => r.method));
    expect(methods.has("SendMessage")).toBe(true);
    expect(methods.has("GetTask")).toBe(true);
    expect(methods.has("message/send")).toBe(false);
    expect(sdkPeer.sends()).toEqual([
      expect.objectContaining({
        text: "scenario:complete from ours",
        // Trace context always rides in metadata.openwop (interop.md; test/integration/a2a-invoke-interop.test.ts).
        metadata: { skillId: "scripted", openwop: { traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-/) } },
      }),
    ]);
  });

  it("restart over 1.0 gRPC: the restarted host finds the credentials by the recorded peer name; the answer is forwarded once", async () => {
    const started = await ours.start("Announce the new office hours", "ask-peer-grpc");
    const waiting = await ours.waitFor(started["id"], (t) => t["status"].state === "input-required", "input-required");
    const store = caller.store;
    await caller.close();
    caller = await startLoggedApp(callerEnv, store);
    await ours.reply(waiting, "the early birds");
    const done = await ours.waitFor(started["id"], terminal, "a terminal state");
    expect(done["status"].state, JSON.stringify(done["metadata"]?.["openwop"])).toBe("completed");
    const progress = await progressOf(started["id"]);
    expect(progress[0]).toMatchObject({ endpoint: `grpc+1.0+${peerHost.baseUrl}/`, peer: "grpc-10" });
    const peerTask = await onPeer.get(progress[0]!["peerTaskId"]);
    expect(
      peerTask["history"].filter((m: any) => m.role === "user" && JSON.stringify(m.parts).includes("the early birds")),
    ).toHaveLength(1);
  });

  it("credentials appear in no task record, event or log line of the caller (only the peer's name is recorded)", async () => {
    const { task } = await callPeer("jsonrpc-10", "one more");
    expect(task["status"].state).toBe("completed");
    const page = await caller.store.list({ tenant: "default", limit: 100 } as never).catch(() => undefined);
    const ids = new Set<string>([
      task["id"],
      ...((page as { tasks?: Array<{ taskId: string }> } | undefined)?.tasks ?? []).map((t) => t.taskId),
    ]);
    for (const id of ids) {
      const stored = JSON.stringify([await caller.store.get(id), await caller.store.readEvents(id, 0)]);
      expect(stored).not.toContain(KEY);
      expect(stored).not.toContain(WRONG_KEY);
    }
    const logs = caller.logs();
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).toContain("remote agent accepted the message");
    expect(logs).not.toContain(KEY);
    expect(logs).not.toContain(WRONG_KEY);
  });
});

describe("named peers at load", () => {
  it("a workflow naming peers that are not configured stops the start, listing every such node", async () => {
    const dir = await mkdtemp(join(tmpdir(), "a2a-invoke-peers-load-"));
    await writeFile(
      join(dir, "a.json"),
      JSON.stringify({
        id: "a",
        name: "A",
        description: "A",
        nodes: [
          { kind: "a2a.invoke", id: "one", peer: "billing" },
          { kind: "a2a.invoke", id: "two", peer: "known" },
        ],
      }),
    );
    await writeFile(
      join(dir, "b.json"),
      JSON.stringify({
        id: "b",
        name: "B",
        description: "B",
        nodes: [{ kind: "a2a.invoke", id: "three", peer: "shipping" }],
      }),
    );
    const peers = JSON.stringify({ known: { cardUrl: "https://known.example/.well-known/agent-card.json" } });
    const err = await startTestApp({ WORKFLOWS_DIR: dir, A2A_PEERS: peers, BUILTIN_WORKFLOWS: "none" }).then(
      async (t) => {
        await t.close();
        return undefined;
      },
      (e: unknown) => e as Error,
    );
    // Every node in full, each with the fix and what is configured (the CLI's config.invalid line lists these).
    const fix = "(configure it in A2A_PEERS, A2A_PEERS_FILE or startHost's peers; configured: known)";
    expect((err as WorkflowLoadError).problems).toEqual([
      `${join(dir, "a.json")}: workflow "a", node "one": peer "billing" is not configured ${fix}`,
      `${join(dir, "b.json")}: workflow "b", node "three": peer "shipping" is not configured ${fix}`,
    ]);
  });

  it("A2A_PEERS problems are reported together and never echo a credential", () => {
    let thrown: unknown;
    try {
      loadConfig({
        A2A_PEERS: JSON.stringify({
          "bad name!": { cardUrl: "https://x.example" },
          a: { url: "https://a.example", credentials: { bearer: "s3cret-value-123", extra: 1 } },
          b: { cardUrl: "https://b.example", protocolVersion: "2.0" },
        }),
      });
    } catch (err) {
      thrown = err;
    }
    const message = (thrown as Error).message;
    expect(message).toContain('peer "bad name!"');
    expect(message).toContain('peer "a": a peer given by "url" (no card) needs "binding" and "protocolVersion" too');
    expect(message).toContain('peer "b": protocolVersion must be "1.0" or "0.3"');
    expect(message).not.toContain("s3cret-value-123");
  });

  it("cardSignature problems: an unknown value, no keys to verify with, no card, private or HMAC keys pinned", () => {
    const privateJwk = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" });
    const peers = {
      s1: { cardUrl: "https://s1.example", cardSignature: "optional", jwksUrl: "https://s1.example/jwks" },
      s2: { cardUrl: "https://s2.example", cardSignature: "required" },
      s3: {
        url: "https://s3.example/a2a",
        binding: "jsonrpc",
        protocolVersion: "1.0",
        cardSignature: "required",
        jwksUrl: "https://s3.example/jwks",
      },
      s4: { cardUrl: "https://s4.example", cardSignature: "required", jwks: { keys: [privateJwk] } },
      s5: { cardUrl: "https://s5.example", cardSignature: "required", jwks: { keys: [{ kty: "oct", k: "c2VjcmV0" }] } },
    };
    const message = (() => {
      try {
        loadConfig({ A2A_PEERS: JSON.stringify(peers) });
      } catch (err) {
        return (err as Error).message;
      }
      return "";
    })();
    expect(message).toContain('peer "s1": cardSignature must be "required" (or left out)');
    expect(message).toContain('peer "s2": cardSignature "required" needs the peer\'s keys: "jwksUrl" or pinned "jwks"');
    expect(message).toContain('peer "s3": cardSignature needs a card ("cardUrl")');
    expect(message).toContain(
      'peer "s4": jwks must be {"keys": [...]} with the peer\'s public JWKs (no private or HMAC keys)',
    );
    expect(message).toContain('peer "s5": jwks must be');
    expect(message).not.toContain(String(privateJwk.d));
  });
});
