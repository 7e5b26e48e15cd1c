// How an a2a.invoke node learns what became of the peer's task: by push (the peer's card offers push
// notifications: we register our callback with the send), by the task's stream (SubscribeToTask held open), or by
// polling GetTask. Two hosts of ours on loopback over A2A 1.0 JSON-RPC, the peer behind a counting proxy (its
// PUBLIC_URL, so its card sends us there) with an API key; the peer's "hold" handler finishes only when the test
// releases it. Checked per path: zero GetTask polls while the peer works (poll interval and backstop 60 s), the
// run's next node starts soon after the peer's terminal commit, and (push) the callback receiver's trust model:
// an unsigned push (a peer without a key configured) only wakes the node, which reads the peer's task before
// anything is committed, so a forged body (genuine token, no signature) commits nothing and the peer's real state
// wins; a push signed with the peer's key (signingKey HMAC, or a JWT against its jwksUrl) is committed, once (a
// replay is a duplicate); an unknown task and a wrong token get the same answer (no existence oracle).
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { PeerCallbackKey } from "../../src/peer/peer-callbacks.js";
import { loadPeerCallbackKey } from "../../src/peer/peer-callback-key.js";
import { signPushBody } from "../../src/push/push-signature.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { startCountingProxy, type CountingProxy } from "../support/counting-proxy.js";
import { freePort } from "../support/server-process.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { jsonRpcCaller, type WireTask } from "../support/jsonrpc-caller.js";

const KEY = "push-caller-key-0123456789abcdef";
/** The peer host's PUSH_SIGNING_KEY, which the "signed" peer entry names as its signingKey. */
const PEER_SIGNING_KEY = "peer-signing-key-0123456789abcdef";
const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];

/** The peer's handler: holds until the test releases the run whose input text it is. */
const gates = new Map<string, () => void>();
const waiting = new Map<string, Promise<void>>();
function gate(text: string): Promise<void> {
  if (!waiting.has(text)) waiting.set(text, new Promise<void>((resolve) => gates.set(text, resolve)));
  return waiting.get(text)!;
}
function release(text: string): number {
  void gate(text);
  const at = Date.now();
  gates.get(text)!();
  return at;
}
const peerHandlers: Record<string, TaskHandler> = {
  async hold(ctx) {
    // A cancel on the peer aborts the handler (its signal), as a well-behaved handler does.
    await Promise.race([
      gate(ctx.input.text),
      new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => reject(new Error("cancelled")), { once: true }),
      ),
    ]);
    return {
      output: { text: `held ${ctx.input.text}` },
      artifacts: [{ name: "held", parts: [{ kind: "text", text: `held ${ctx.input.text}` }] }],
    };
  },
};
/** Our side: when the node after a2a.invoke started, per run. */
const nextNodeAt = new Map<string, number>();
const callerHandlers: Record<string, TaskHandler> = {
  async mark(ctx) {
    nextNodeAt.set(ctx.taskId, Date.now());
    return { output: {} };
  },
};

const terminal = (task: WireTask) => ["completed", "failed", "canceled", "rejected"].includes(task["status"].state);

describe("a2a.invoke learns by push, then stream, then poll (A2A 1.0 JSON-RPC, two hosts)", () => {
  let mongo: MongoClient;
  const dbName = `push_${randomUUID().slice(0, 8)}`;
  let peerHost: TestApp;
  let proxy: CountingProxy;
  let cardServer: Server | undefined;
  let v03CardServer: Server | undefined;
  let jwksServer: Server | undefined;
  let jwtKey: CryptoKey;
  let clusterBase: Record<string, string> = {};
  const callers: Record<"push" | "stream" | "poll", TestApp> = {} as never;

  beforeAll(async () => {
    mongo = await MongoClient.connect(inject("mongoUri"));
    const store = new MongoTaskStore(mongo, mongo.db(dbName));
    await store.init();
    const peerDir = await mkdtemp(join(tmpdir(), "a2a-push-peer-"));
    await writeFile(
      join(peerDir, "hold.json"),
      JSON.stringify({
        id: "hold",
        name: "Hold",
        description: "Works until the test releases it.",
        nodes: [{ kind: "task", id: "work", handler: "hold" }],
      }),
    );
    // The peer sits behind the counting proxy: its card (PUBLIC_URL) names the proxy.
    const peerPort = await freePort();
    proxy = await startCountingProxy(peerPort);
    peerHost = await startTestApp(
      {
        PORT: String(peerPort),
        PUBLIC_URL: proxy.url,
        WORKFLOWS_DIR: peerDir,
        API_KEYS: JSON.stringify([{ id: "caller", tenant: "acme", scopes: ALL, key: KEY }]),
        // Our callback is on loopback: the peer's push egress guard allows it only under the test flag.
        PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
        PUSH_SIGNING_KEY: PEER_SIGNING_KEY,
        PUSH_RETRY_BASE_MS: "50",
        PUSH_RETRY_MAX_MS: "200",
      },
      store,
      peerHandlers,
    );
    const callerDir = await mkdtemp(join(tmpdir(), "a2a-push-caller-"));
    await writeFile(
      join(callerDir, "call-hold.json"),
      JSON.stringify({
        id: "call-hold",
        name: "Call hold",
        description: "Calls the peer's hold skill, then marks the time.",
        nodes: [
          { kind: "a2a.invoke", id: "call", peer: "peer", skillId: "hold" },
          { kind: "task", id: "after", handler: "mark" },
        ],
      }),
    );
    await writeFile(
      join(callerDir, "ask-peer.json"),
      JSON.stringify({
        id: "ask-peer",
        name: "Ask peer",
        description: "The peer asks us a question.",
        nodes: [{ kind: "a2a.invoke", id: "call", peer: "peer", skillId: "clarify" }],
      }),
    );
    for (const peer of ["grpc", "rest", "signed", "jwks"]) {
      await writeFile(
        join(callerDir, `call-hold-${peer}.json`),
        JSON.stringify({
          id: `call-hold-${peer}`,
          name: `Call hold (${peer})`,
          description: "The same over another binding.",
          nodes: [
            { kind: "a2a.invoke", id: "call", peer, skillId: "hold" },
            { kind: "task", id: "after", handler: "mark" },
          ],
        }),
      );
    }
    const cardUrl = `${proxy.url}/.well-known/agent-card.json`;
    // gRPC (HTTP/2) cannot pass the HTTP/1.1 counting proxy: the gRPC peer reads a copy of the card that names the peer itself.
    const card = await (await fetch(cardUrl, { headers: { "a2a-version": "1.0" } })).text();
    const direct = card.replaceAll(`127.0.0.1:${proxy.port}`, `127.0.0.1:${peerPort}`);
    cardServer = createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(direct));
    await new Promise<void>((r) => cardServer!.listen(0, "127.0.0.1", r));
    const directCardUrl = `http://127.0.0.1:${(cardServer.address() as AddressInfo).port}/.well-known/agent-card.json`;
    // The peer as a 0.3-only agent would describe itself (through the proxy), offering push and streaming.
    const v03 = JSON.stringify({
      protocolVersion: "0.3.0",
      name: "Peer host (0.3 only)",
      description: "Our peer host, as a 0.3-only card",
      url: `${proxy.url}/a2a/jsonrpc`,
      preferredTransport: "JSONRPC",
      version: "1.0.0",
      capabilities: { streaming: true, pushNotifications: true },
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [],
    });
    v03CardServer = createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(v03));
    await new Promise<void>((r) => v03CardServer!.listen(0, "127.0.0.1", r));
    const v03CardUrl = `http://127.0.0.1:${(v03CardServer.address() as AddressInfo).port}/.well-known/agent-card.json`;
    await writeFile(
      join(callerDir, "call-hold-v03.json"),
      JSON.stringify({
        id: "call-hold-v03",
        name: "Call hold (0.3)",
        description: "The same over A2A 0.3.",
        nodes: [
          { kind: "a2a.invoke", id: "call", peer: "v03", skillId: "hold" },
          { kind: "task", id: "after", handler: "mark" },
        ],
      }),
    );
    // A peer that signs its pushes with JWTs (ES256) against a JWKS served on loopback (the test signs for it).
    const keyPair = await generateKeyPair("ES256");
    jwtKey = keyPair.privateKey;
    const jwks = JSON.stringify({
      keys: [{ ...(await exportJWK(keyPair.publicKey)), kid: "peer-1", alg: "ES256", use: "sig" }],
    });
    jwksServer = createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(jwks));
    await new Promise<void>((r) => jwksServer!.listen(0, "127.0.0.1", r));
    const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`;
    const peers = JSON.stringify({
      v03: { cardUrl: v03CardUrl, credentials: { bearer: KEY } },
      signed: {
        cardUrl,
        binding: "jsonrpc",
        protocolVersion: "1.0",
        credentials: { bearer: KEY },
        signingKey: PEER_SIGNING_KEY,
      },
      jwks: { cardUrl, binding: "jsonrpc", protocolVersion: "1.0", credentials: { bearer: KEY }, jwksUrl },
      peer: { cardUrl, binding: "jsonrpc", protocolVersion: "1.0", credentials: { bearer: KEY } },
      grpc: { cardUrl: directCardUrl, binding: "grpc", protocolVersion: "1.0", credentials: { bearer: KEY } },
      rest: { cardUrl, binding: "http+json", protocolVersion: "1.0", credentials: { bearer: KEY } },
    });
    const base = {
      A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
      A2A_PEERS: peers,
      WORKFLOWS_DIR: callerDir,
      A2A_PEER_RETRY_BASE_MS: "20",
      A2A_PEER_RETRY_MAX_MS: "40",
      A2A_PEER_REQUEST_TIMEOUT_MS: "3000",
    };
    clusterBase = base;
    // Push and stream: a 60 s poll interval (and the default 60 s backstop), so only news can move the run on.
    callers.push = await startTestApp({ ...base, A2A_PEER_POLL_MS: "60000" }, undefined, callerHandlers);
    callers.stream = await startTestApp(
      { ...base, A2A_PEER_POLL_MS: "60000", A2A_PEER_PUSH: "false" },
      undefined,
      callerHandlers,
    );
    callers.poll = await startTestApp(
      { ...base, A2A_PEER_POLL_MS: "50", A2A_PEER_PUSH: "false", A2A_PEER_STREAM: "false" },
      undefined,
      callerHandlers,
    );
  });

  afterAll(async () => {
    for (const text of waiting.keys()) release(text);
    for (const caller of Object.values(callers)) await caller?.close();
    await peerHost?.close();
    await proxy?.close();
    cardServer?.close();
    v03CardServer?.close();
    jwksServer?.close();
    await mongo?.db(dbName).dropDatabase();
    await mongo?.close();
  });

  const progressOf = async (caller: TestApp, runId: string): Promise<Array<Record<string, any>>> =>
    (await caller.store.readEvents(runId, 0))
      .filter((e) => e.type === "node.progress")
      .map((e) => (e.payload as { progress: Record<string, any> }).progress);

  /** Starts call-hold on `caller`, waits until the peer works on it, lets it work a while, releases it; answers the numbers. */
  async function runPath(path: "push" | "stream" | "poll", skill = "call-hold") {
    const caller = callers[path];
    const ours = jsonRpcCaller(() => caller.baseUrl, { blocking: false, waitMs: 15_000 });
    const text = `${path} ${randomUUID()}`;
    const started = await ours.start(text, skill);
    await ours.waitFor(started["id"], () => true, "started");
    let progress: Array<Record<string, any>> = [];
    for (let i = 0; i < 200 && progress.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      progress = await progressOf(caller, started["id"]);
    }
    expect(progress.length, "the peer's task id is recorded").toBeGreaterThan(0);
    proxy.reset();
    // The peer works for a while: long enough for several polls at the poll path's interval.
    await new Promise((r) => setTimeout(r, 600));
    const whileWorking = proxy.counts();
    release(text);
    const task = await ours.waitFor(started["id"], terminal, "a terminal state");
    const peerTaskId = progress[0]!["peerTaskId"] as string;
    const peerRecord = await peerHost.store.get(peerTaskId);
    const peerDoneAt = Date.parse(peerRecord!.updatedAt);
    return {
      caller,
      task,
      progress: await progressOf(caller, task["id"]),
      whileWorking,
      afterRelease: proxy.counts(),
      handoffMs: nextNodeAt.get(task["id"])! - peerDoneAt,
      peerTaskId,
    };
  }

  it("push: the peer's card offers push, our callback is registered with the send; no GetTask while it works; the run moves on at once", async () => {
    const r = await runPath("push");
    expect(r.task["status"].state, JSON.stringify(r.task["metadata"])).toBe("completed");
    expect(r.progress[0]).toMatchObject({ notify: "push" });
    expect(r.whileWorking["GetTask"] ?? 0).toBe(0);
    expect(r.whileWorking["SubscribeToTask"] ?? 0).toBe(0);
    // This peer has no key configured: its push only woke the node (nothing of it committed, no wake mark: the
    // node waits on this instance), which read the finished task once and recorded what the peer said.
    expect(r.afterRelease["GetTask"] ?? 0).toBe(1);
    expect(
      r.progress.filter((p) => p["pushedAt"] !== undefined),
      "nothing committed from the unsigned push",
    ).toEqual([]);
    expect(r.progress.at(-1)).toMatchObject({ peerState: "completed" });
    expect(JSON.stringify(r.task["artifacts"])).toContain("held push");
    expect(r.task["artifacts"][0].metadata).toMatchObject({ contentTrust: "untrusted" });
    // Poll interval 60 s and backstop 60 s: only the push can have moved it on this fast.
    expect(r.handoffMs).toBeLessThan(5_000);
    console.log(`push handoff ${r.handoffMs} ms; peer calls after release: ${JSON.stringify(r.afterRelease)}`);
  });

  for (const binding of ["grpc", "rest"] as const) {
    it(`push over ${binding === "grpc" ? "gRPC" : "HTTP+JSON"} 1.0: the config goes inline with the send there too`, async () => {
      const r = await runPath("push", `call-hold-${binding}`);
      expect(r.task["status"].state, JSON.stringify(r.task["metadata"])).toBe("completed");
      expect(r.progress[0]).toMatchObject({ notify: "push" });
      // (gRPC goes to the peer directly, so only the HTTP+JSON reads are counted here.)
      if (binding === "rest") expect(r.whileWorking[`GET /tasks/${r.peerTaskId}`] ?? 0).toBe(0);
      expect(r.handoffMs).toBeLessThan(5_000);
    });
  }

  for (const path of ["push", "stream"] as const) {
    it(`${path} over A2A 0.3 JSON-RPC (${path === "push" ? "pushNotificationConfig inline, a 0.3 status-update pushed" : "tasks/resubscribe held"})`, async () => {
      const r = await runPath(path, "call-hold-v03");
      expect(r.task["status"].state, JSON.stringify(r.task["metadata"])).toBe("completed");
      expect(r.progress[0]).toMatchObject({ notify: path, endpoint: `jsonrpc+0.3+${proxy.url}/a2a/jsonrpc` });
      expect(r.whileWorking["tasks/get"] ?? 0).toBe(0);
      expect(r.afterRelease["tasks/get"] ?? 0).toBeLessThanOrEqual(path === "push" ? 1 : 0);
      expect(JSON.stringify(r.task["artifacts"])).toContain(`held ${path}`);
      expect(r.handoffMs).toBeLessThan(5_000);
    });
  }

  it("stream over HTTP+JSON 1.0: POST /tasks/{id}:subscribe held; no GetTask", async () => {
    const r = await runPath("stream", "call-hold-rest");
    expect(r.task["status"].state, JSON.stringify(r.task["metadata"])).toBe("completed");
    expect(r.progress[0]).toMatchObject({ notify: "stream" });
    expect(r.whileWorking[`GET /tasks/${r.peerTaskId}`] ?? 0).toBe(0);
    expect(r.afterRelease[`GET /tasks/${r.peerTaskId}`] ?? 0).toBe(0);
    // (The subscribe was attached before the counts were reset; with no read at all, only the stream can have told us.)
    expect(Object.keys(r.afterRelease).filter((k) => k.startsWith("GET "))).toEqual([]);
    expect(JSON.stringify(r.task["artifacts"])).toContain("held stream");
    expect(r.handoffMs).toBeLessThan(5_000);
  });

  it("stream over gRPC 1.0: SubscribeToTask held on the HTTP/2 session; the run moves on at once", async () => {
    const r = await runPath("stream", "call-hold-grpc");
    expect(r.task["status"].state, JSON.stringify(r.task["metadata"])).toBe("completed");
    expect(r.progress[0]).toMatchObject({ notify: "stream" });
    expect(String(r.progress[0]!["endpoint"])).toMatch(/^grpc\+1\.0\+/);
    expect(JSON.stringify(r.task["artifacts"])).toContain("held stream");
    // (gRPC goes to the peer directly, past the counting proxy.) Poll interval and backstop are 60 s: only the
    // held stream can have told us this fast.
    expect(r.handoffMs).toBeLessThan(5_000);
  });

  it("stream: without push, SubscribeToTask is held; no GetTask at all; the run moves on at once", async () => {
    const r = await runPath("stream");
    expect(r.task["status"].state, JSON.stringify(r.task["metadata"])).toBe("completed");
    expect(r.progress[0]).toMatchObject({ notify: "stream" });
    expect(r.whileWorking["GetTask"] ?? 0).toBe(0);
    expect(r.afterRelease["GetTask"] ?? 0).toBe(0);
    expect(JSON.stringify(r.task["artifacts"])).toContain("held stream");
    expect(r.handoffMs).toBeLessThan(5_000);
    console.log(`stream handoff ${r.handoffMs} ms; peer calls after release: ${JSON.stringify(r.afterRelease)}`);
  });

  it("poll only: GetTask every A2A_PEER_POLL_MS", async () => {
    const r = await runPath("poll");
    expect(r.task["status"].state).toBe("completed");
    expect(r.progress[0]).toMatchObject({ notify: "poll" });
    expect(r.whileWorking["GetTask"] ?? 0).toBeGreaterThan(3);
    console.log(`poll handoff ${r.handoffMs} ms; GetTask while working 600 ms: ${r.whileWorking["GetTask"]}`);
  });

  for (const path of ["push", "stream"] as const) {
    it(`${path}: the peer's question comes in by ${path}, our answer is forwarded once, its completion comes in by ${path}; no GetTask poll`, async () => {
      const caller = callers[path];
      const ours = jsonRpcCaller(() => caller.baseUrl, { blocking: false, waitMs: 15_000 });
      proxy.reset();
      const started = await ours.start("Announce the new office hours", "ask-peer");
      const asking = await ours.waitFor(
        started["id"],
        (t) => t["status"].state === "input-required" || terminal(t),
        "input-required",
      );
      expect(asking["status"].state).toBe("input-required");
      expect(JSON.stringify(asking["status"].message)).toContain("Who is the audience");
      const rpc = await fetch(`${caller.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: {
              kind: "message",
              messageId: randomUUID(),
              role: "user",
              taskId: asking["id"],
              contextId: asking["contextId"],
              parts: [{ kind: "text", text: "the night shift" }],
            },
          },
        }),
      });
      expect(rpc.status).toBe(200);
      const done = await ours.waitFor(started["id"], terminal, "a terminal state");
      expect(done["status"].state, JSON.stringify(done["metadata"])).toBe("completed");
      expect(JSON.stringify(done["artifacts"])).toContain("night shift");
      // One send, one forwarded answer; GetTask only to read what a content-free push announced (the question,
      // the finished task) and once when the node resumed with the answer. The forwarded answer is sent
      // non-blocking, so the peer may finish before our SubscribeToTask reaches it: 1.0 refuses a stream of an
      // ended task, and the final task is then read once more. Never a periodic poll.
      expect(proxy.count("SendMessage")).toBe(2);
      expect(proxy.count("GetTask"), JSON.stringify(proxy.counts())).toBeLessThanOrEqual(
        (path === "push" ? 3 : 1) + proxy.count("SubscribeToTask refused"),
      );
      const peerTaskId = (await progressOf(caller, started["id"]))[0]!["peerTaskId"];
      const peerRecord = await peerHost.store.get(peerTaskId);
      expect(peerRecord!.a2a.state).toBe("completed");
    });
  }

  it("push: cancel both ways — the peer's cancel arrives by push and cancels our run; our cancel cancels the peer's task", async () => {
    const caller = callers.push;
    const ours = jsonRpcCaller(() => caller.baseUrl, { blocking: false, waitMs: 15_000 });
    const peerRpc = async (method: string, params: unknown) => {
      const res = await fetch(`${proxy.url}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      return ((await res.json()) as { result?: WireTask }).result;
    };
    const startAndRecord = async () => {
      const started = await ours.start(`cancel ${randomUUID()}`, "call-hold");
      let progress: Array<Record<string, any>> = [];
      for (let i = 0; i < 300 && progress.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        progress = await progressOf(caller, started["id"]);
      }
      return { id: started["id"] as string, peerTaskId: progress[0]!["peerTaskId"] as string };
    };
    const theirs = await startAndRecord();
    await peerRpc("tasks/cancel", { id: theirs.peerTaskId });
    const cancelled = await ours.waitFor(theirs.id, terminal, "cancelled by the peer");
    expect(cancelled["status"].state).toBe("canceled");
    expect(JSON.stringify(await caller.store.readEvents(theirs.id, 0))).toContain("cross_protocol_cancel");

    const mine = await startAndRecord();
    await fetch(`${caller.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/cancel", params: { id: mine.id } }),
    });
    for (let i = 0; i < 300; i++) {
      if ((await peerHost.store.get(mine.peerTaskId))?.a2a.state === "canceled") break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await peerHost.store.get(mine.peerTaskId))?.a2a.state).toBe("canceled");
  });

  it("several instances: an unsigned push that lands on another instance is marked there once (a wake, no state), and the lease holder reads the peer and moves the run on", async () => {
    // Two caller instances on one database (change streams carry commits between them); the run's instance gives
    // peers the OTHER instance's callback URL, as a load balancer might route the push.
    const encryptionKey = randomBytes(32).toString("hex");
    const callerDb = `push_cluster_${randomUUID().slice(0, 8)}`;
    const storeOf = async () => {
      const store = new MongoTaskStore(mongo, mongo.db(callerDb));
      await store.init();
      return store;
    };
    const shared = {
      ...clusterBase,
      A2A_PEER_POLL_MS: "60000",
      PUSH_ENCRYPTION_KEY: encryptionKey,
      PUSH_SIGNING_KEY: randomBytes(24).toString("base64url"),
    };
    const other = await startTestApp({ ...shared, INSTANCE_ID: "receiver" }, await storeOf(), callerHandlers);
    const holder = await startTestApp(
      { ...shared, INSTANCE_ID: "holder", A2A_PEER_CALLBACK_URL: other.baseUrl },
      await storeOf(),
      callerHandlers,
    );
    try {
      const ours = jsonRpcCaller(() => holder.baseUrl, { blocking: false, waitMs: 15_000 });
      const text = `cluster ${randomUUID()}`;
      const started = await ours.start(text, "call-hold");
      let progress: Array<Record<string, any>> = [];
      for (let i = 0; i < 300 && progress.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        progress = await progressOf(holder, started["id"]);
      }
      expect(progress[0]).toMatchObject({ notify: "push" });
      await new Promise((r) => setTimeout(r, 300));
      proxy.reset();
      release(text);
      const task = await ours.waitFor(started["id"], terminal, "a terminal state", 20_000);
      expect(task["status"].state).toBe("completed");
      const all = await progressOf(holder, started["id"]);
      // The (unsigned) push was marked once by the other instance, without its claimed state; the holder, woken
      // by the commit feed, read the finished task once and recorded what the peer said.
      const marks = all.filter((p) => p["pushedAt"] !== undefined);
      expect(marks).toHaveLength(1);
      expect(marks[0]!["peerState"]).not.toBe("completed");
      expect(proxy.count("GetTask")).toBe(1);
      expect(all.at(-1)).toMatchObject({ peerState: "completed" });
      const peerRecord = await peerHost.store.get(all[0]!["peerTaskId"]);
      const handoff = nextNodeAt.get(started["id"])! - Date.parse(peerRecord!.updatedAt);
      expect(handoff).toBeLessThan(5_000);
      console.log(`cross-instance push handoff ${handoff} ms`);
    } finally {
      await holder.close();
      await other.close();
      await mongo.db(callerDb).dropDatabase();
    }
  });

  /** Starts `skill` on the push caller and waits until the peer's task id is recorded; the visit's token and a poster. */
  async function startHeld(skill: string) {
    const caller = callers.push;
    const ours = jsonRpcCaller(() => caller.baseUrl, { blocking: false, waitMs: 15_000 });
    const text = `${skill} ${randomUUID()}`;
    const started = await ours.start(text, skill);
    let progress: Array<Record<string, any>> = [];
    for (let i = 0; i < 200 && progress.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      progress = await progressOf(caller, started["id"]);
    }
    const first = progress[0]!;
    const id = started["id"] as string;
    const url = `${caller.baseUrl}/v1/peer-callbacks/${id}`;
    const key = new PeerCallbackKey(
      (await loadPeerCallbackKey({ dataDir: caller.config.dataDir, production: false })).key,
    );
    const token = key.tokenFor(id, first["key"]);
    const post = (body: string, headers: Record<string, string> = {}, target = url) =>
      fetch(target, { method: "POST", headers: { "content-type": "application/a2a+json", ...headers }, body });
    const status = (state: string, timestamp = new Date().toISOString()) =>
      JSON.stringify({
        statusUpdate: { taskId: first["peerTaskId"], contextId: first["peerContextId"], status: { state, timestamp } },
      });
    return { caller, ours, text, id, first, url, token, post, status };
  }
  const outcomeOf = async (res: Response) => ((await res.json()) as { outcome: string }).outcome;
  const settle = () => new Promise((r) => setTimeout(r, 300));

  it("an unsigned push with a genuine token is a hint: a forged completed Task with an artifact, a forged completed status and a forged artifact update commit nothing; the node reads the peer once for each and the peer's real state wins", async () => {
    const h = await startHeld("call-hold");
    const peerTaskId = h.first["peerTaskId"] as string;
    await settle(); // the peer's own "working" push has come and gone
    proxy.reset();
    const forgedTask = JSON.stringify({
      task: {
        id: peerTaskId,
        contextId: h.first["peerContextId"],
        status: { state: "TASK_STATE_COMPLETED", timestamp: new Date().toISOString() },
        artifacts: [{ artifactId: "forged", parts: [{ text: "FORGED ARTIFACT" }] }],
      },
    });
    const taskPush = await h.post(forgedTask, { "x-a2a-notification-token": h.token });
    expect(taskPush.status).toBe(200);
    expect(await outcomeOf(taskPush)).toBe("woken");
    for (let i = 0; i < 150 && proxy.count("GetTask") === 0; i++) await new Promise((r) => setTimeout(r, 20));
    await settle();
    expect(proxy.count("GetTask"), "one GetTask for the woken node").toBe(1);
    const statusPush = await h.post(h.status("TASK_STATE_COMPLETED"), { "x-a2a-notification-token": h.token });
    expect(await outcomeOf(statusPush)).toBe("woken");
    for (let i = 0; i < 150 && proxy.count("GetTask") === 1; i++) await new Promise((r) => setTimeout(r, 20));
    await settle();
    expect(proxy.count("GetTask"), "one GetTask per woken callback").toBe(2);
    // Nothing of either body was committed; the run still waits on the peer, which still works.
    expect((await h.ours.get(h.id))["status"].state).toBe("working");
    const progress = await progressOf(h.caller, h.id);
    expect(progress.filter((p) => p["pushedAt"] !== undefined || p["peerState"] === "completed")).toEqual([]);
    expect(JSON.stringify(await h.caller.store.readEvents(h.id, 0))).not.toContain("FORGED");
    // A forged artifact update: never taken from a push (artifacts come with the task when it is read).
    const forgedArtifact = JSON.stringify({
      artifactUpdate: {
        taskId: peerTaskId,
        contextId: h.first["peerContextId"],
        artifact: { artifactId: "forged", parts: [{ text: "FORGED ARTIFACT" }] },
      },
    });
    expect(await outcomeOf(await h.post(forgedArtifact, { "x-a2a-notification-token": h.token }))).toBe("ignored");
    // A claim that would not move the run (still working) wakes nothing and reads nothing.
    expect(
      await outcomeOf(
        await h.post(h.status("TASK_STATE_WORKING", new Date(Date.now() + 1000).toISOString()), {
          "x-a2a-notification-token": h.token,
        }),
      ),
    ).toBe("duplicate");
    expect(
      await outcomeOf(
        await h.post(h.status("TASK_STATE_SUBMITTED", new Date(Date.now() + 1000).toISOString()), {
          "x-a2a-notification-token": h.token,
        }),
      ),
    ).toBe("ignored");
    await settle();
    expect(proxy.count("GetTask")).toBe(2);
    // The peer's real completion (its own push) moves the run on, with the peer's artifact only.
    release(h.text);
    const done = await h.ours.waitFor(h.id, terminal, "a terminal state");
    expect(done["status"].state).toBe("completed");
    expect(JSON.stringify(done["artifacts"])).toContain(`held ${h.text}`);
    expect(JSON.stringify(done["artifacts"])).not.toContain("FORGED");
    // The token is in no record and no event of ours.
    expect(JSON.stringify(await h.caller.store.readEvents(h.id, 0))).not.toContain(h.token);
    expect(JSON.stringify(await h.caller.store.get(h.id))).not.toContain(h.token);
    // After the end: a late push is acknowledged without a commit.
    const late = await h.post(h.status("TASK_STATE_COMPLETED"), { "x-a2a-notification-token": h.token });
    expect(late.status).toBe(200);
    expect(["moved-on", "duplicate"]).toContain(await outcomeOf(late));
  });

  it("no existence oracle: an unknown task, a missing token and a wrong token get the same answer (401, same body); a wrong token moves no run; the other routes taking a task id answer an unauthenticated caller the same for an existing and an unknown id", async () => {
    const h = await startHeld("call-hold");
    const unknown = `${h.caller.baseUrl}/v1/peer-callbacks/${randomUUID()}`;
    const body = h.status("TASK_STATE_COMPLETED");
    const answers = await Promise.all(
      [
        h.post(body, { "x-a2a-notification-token": "forged-token" }),
        h.post(body),
        h.post(body, { "x-a2a-notification-token": h.token }, unknown),
        h.post(body, { "x-a2a-notification-token": "forged-token" }, unknown),
        h.post(body, {}, unknown),
      ].map(async (p) => {
        const res = await p;
        return { status: res.status, body: await res.text(), challenge: res.headers.get("www-authenticate") };
      }),
    );
    expect(answers[0]).toEqual({
      status: 401,
      body: JSON.stringify({ outcome: "unauthenticated" }),
      challenge: expect.stringContaining("Bearer"),
    });
    for (const a of answers) expect(a).toEqual(answers[0]);
    expect((await h.ours.get(h.id))["status"].state).toBe("working");
    expect((await progressOf(h.caller, h.id)).filter((p) => p["pushedAt"] !== undefined)).toEqual([]);
    // The other routes that take a task id authenticate first: on the peer host (API keys), an unauthenticated
    // read or cancel of its existing task and of an unknown id get the same 401.
    const peerTaskId = h.first["peerTaskId"] as string;
    const ask = async (id: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${proxy.url}${path.replace("{id}", id)}`, {
        method,
        headers: { "content-type": "application/json" },
        ...(body ? { body: JSON.stringify(body).replace("{id}", id) } : {}),
      });
      return { status: res.status, body: (await res.text()).replaceAll(id, "{id}") };
    };
    for (const [method, path, body] of [
      ["GET", "/v1/runs/{id}"],
      ["GET", "/v1/runs/{id}/events"],
      ["POST", "/v1/runs/{id}/cancel", {}],
      ["GET", "/console/api/tasks/{id}"],
      ["GET", "/console/api/tasks/{id}/push"],
      ["GET", "/v1/a2a/tasks/{id}"],
      ["POST", "/a2a/jsonrpc", { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "{id}" } }],
    ] as const) {
      const existing = await ask(peerTaskId, method, path, body);
      expect(existing.status, `${method} ${path}`).toBe(401);
      expect(await ask(randomUUID(), method, path, body), `${method} ${path}`).toEqual(existing);
    }
    await h.ours.cancel(h.id);
  });

  it("push signed with the peer's signingKey (HMAC): taken as the peer's word and committed by the receiver; the run moves on at once", async () => {
    const r = await runPath("push", "call-hold-signed");
    expect(r.task["status"].state, JSON.stringify(r.task["metadata"])).toBe("completed");
    expect(
      r.progress.some((p) => p["pushedAt"] !== undefined && p["peerState"] === "completed"),
      "the signed pushed state was committed",
    ).toBe(true);
    expect(r.afterRelease["GetTask"] ?? 0).toBeLessThanOrEqual(1);
    expect(JSON.stringify(r.task["artifacts"])).toContain("held push");
  });

  it("a signed push (HMAC) is committed once: a replay is a duplicate; unsigned or wrongly signed pushes of that peer are refused (401)", async () => {
    const h = await startHeld("call-hold-signed");
    const body = h.status("TASK_STATE_INPUT_REQUIRED");
    const timestamp = Math.floor(Date.now() / 1000);
    const signed = {
      "x-a2a-notification-token": h.token,
      "x-openwop-timestamp": String(timestamp),
      "x-openwop-signature": signPushBody(PEER_SIGNING_KEY, timestamp, body),
    };
    expect((await h.post(body, { "x-a2a-notification-token": h.token })).status).toBe(401);
    expect(
      (
        await h.post(body, {
          ...signed,
          "x-openwop-signature": signPushBody("another-key-0123456789abcdef", timestamp, body),
        })
      ).status,
    ).toBe(401);
    expect((await h.post(h.status("TASK_STATE_COMPLETED"), signed)).status, "the signature covers the body").toBe(401);
    const first = await h.post(body, signed);
    expect(first.status).toBe(200);
    expect(await outcomeOf(first)).toBe("committed");
    const replay = await h.post(body, signed);
    expect(replay.status).toBe(200);
    expect(await outcomeOf(replay)).toBe("duplicate");
    await settle();
    const committed = (await progressOf(h.caller, h.id)).filter(
      (p) => p["pushedAt"] !== undefined && p["peerState"] === "input-required",
    );
    expect(committed).toHaveLength(1);
    await h.ours.cancel(h.id);
  });

  it("a push signed with a JWT against the peer's jwksUrl is committed once (a replay is a duplicate); a JWT of another body or key, or none, is refused (401)", async () => {
    const h = await startHeld("call-hold-jwks");
    const body = h.status("TASK_STATE_INPUT_REQUIRED");
    const sha = (text: string) => createHash("sha256").update(text).digest("hex");
    const jwtFor = (text: string, key: CryptoKey = jwtKey) =>
      new SignJWT({ request_body_sha256: sha(text) })
        .setProtectedHeader({ alg: "ES256", kid: "peer-1" })
        .setIssuedAt()
        .setJti(randomUUID())
        .sign(key);
    const withJwt = async (text: string, key?: CryptoKey) => ({
      "x-a2a-notification-token": h.token,
      authorization: `Bearer ${await jwtFor(text, key)}`,
    });
    expect((await h.post(body, { "x-a2a-notification-token": h.token })).status).toBe(401);
    expect(
      (await h.post(body, await withJwt(h.status("TASK_STATE_COMPLETED")))).status,
      "the JWT covers another body",
    ).toBe(401);
    expect(
      (await h.post(body, await withJwt(body, (await generateKeyPair("ES256")).privateKey))).status,
      "a key not in the JWKS",
    ).toBe(401);
    const headers = await withJwt(body);
    const first = await h.post(body, headers);
    expect(first.status).toBe(200);
    expect(await outcomeOf(first)).toBe("committed");
    expect(await outcomeOf(await h.post(body, headers))).toBe("duplicate");
    await settle();
    expect(
      (await progressOf(h.caller, h.id)).filter(
        (p) => p["pushedAt"] !== undefined && p["peerState"] === "input-required",
      ),
    ).toHaveLength(1);
    await h.ours.cancel(h.id);
  });
});
