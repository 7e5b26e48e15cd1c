// A peer with a JWKS is heard (issue 38, item 3). Two hosts of ours on loopback, each with its own DATA_DIR (so its
// own signing keys): host A's workflow a2a.invokes host B, named in A's A2A_PEERS with `jwksUrl` pointing at B's
// /.well-known/jwks.json. A registers its callback so that B signs (Bearer without credentials, the per-visit token
// in `token`), B's push worker sends `Authorization: Bearer <JWT>` and `X-A2A-Notification-Token`, and A's receiver
// verifies the JWT against B's JWKS and commits the pushed state. A's poll interval and backstop are 60 s, so only
// a push can move the run on within a second. Bad input with exact headers: a JWKS peer's push carrying the static
// token as Bearer and no JWT (what B sent before the fix), and one signed by another key under B's kid, are refused (401) with nothing
// committed, and the host keeps serving. A peer configured `"pushAuth": "static-bearer"` is given the token as its
// Bearer credentials and its pushes wake the node (a hint) instead of being refused.
import { createHash, randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { generateKeyPair, SignJWT } from "jose";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { loadPeerCallbackKey } from "../../src/peer/peer-callback-key.js";
import { PeerCallbackKey } from "../../src/peer/peer-callbacks.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { signPushBody } from "../../src/push/push-signature.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { jsonRpcCaller, type WireTask } from "../support/jsonrpc-caller.js";
import { freePort, TEST_BUILTIN_WORKFLOWS } from "../support/server-process.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const KEY = "jwks-caller-key-0123456789abcdef";
/** B's PUSH_SIGNING_KEY: B signs every push with it too, but A knows it not (no `signingKey` for B), so it proves nothing there. */
const PEER_PUSH_SIGNING_KEY = "jwks-peer-push-signing-key-0123456789";
const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];

/** B's handler holds until the test releases the run whose input text it is. */
const gates = new Map<string, () => void>();
const waiting = new Map<string, Promise<void>>();
function gate(text: string): Promise<void> {
  if (!waiting.has(text)) waiting.set(text, new Promise<void>((resolve) => gates.set(text, resolve)));
  return waiting.get(text)!;
}
const peerHandlers: Record<string, TaskHandler> = {
  async hold(ctx) {
    await Promise.race([
      gate(ctx.input.text),
      new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => reject(new Error("cancelled")), { once: true }),
      ),
    ]);
    return { output: { text: `held ${ctx.input.text}` } };
  },
};
/** A's node after the a2a.invoke: when it started, per run. */
const nextNodeAt = new Map<string, number>();
const callerHandlers: Record<string, TaskHandler> = {
  async mark(ctx) {
    nextNodeAt.set(ctx.taskId, Date.now());
    return { output: {} };
  },
};

const terminal = (task: WireTask) => ["completed", "failed", "canceled", "rejected"].includes(task["status"].state);
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** A host like startTestApp's, whose log lines are kept (to find the receiver's verdicts, and to look for secrets). */
async function startLoggedApp(
  env: Record<string, string>,
  handlers: Record<string, TaskHandler>,
): Promise<TestApp & { logs: () => string }> {
  const port = await freePort();
  const config = loadConfig({
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: "info",
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
  const store = new MemoryTaskStore();
  const app: App = await createApp({
    config,
    logger: createLogger(config.logLevel, sink),
    store,
    durableStore: false,
    handlers,
  });
  await app.listen();
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    app,
    store,
    config,
    logs: () => lines.join(""),
    close: () => app.close(),
  };
}

describe("a2a.invoke: a peer with a JWKS signs its pushes and is heard (two hosts)", () => {
  let mongo: MongoClient;
  const dbName = `peerjwks_${randomUUID().slice(0, 8)}`;
  let peerHost: TestApp;
  let caller: Awaited<ReturnType<typeof startLoggedApp>>;
  let peerKid: string;

  beforeAll(async () => {
    // B keeps durable tasks (MongoDB), so it takes a 1.0 `returnImmediately` send.
    mongo = await MongoClient.connect(inject("mongoUri"));
    const store = new MongoTaskStore(mongo, mongo.db(dbName));
    await store.init();
    const peerDir = await mkdtemp(join(tmpdir(), "a2a-jwks-peer-"));
    await writeFile(
      join(peerDir, "hold.json"),
      JSON.stringify({
        id: "hold",
        name: "Hold",
        description: "Works until the test releases it.",
        nodes: [{ kind: "task", id: "work", handler: "hold" }],
      }),
    );
    peerHost = await startTestApp(
      {
        DATA_DIR: await mkdtemp(join(tmpdir(), "a2a-jwks-peer-data-")),
        WORKFLOWS_DIR: peerDir,
        API_KEYS: JSON.stringify([{ id: "caller", tenant: "acme", scopes: ALL, key: KEY }]),
        // A's callback is on loopback: B's push egress guard allows it only under the test flag.
        PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
        PUSH_SIGNING_KEY: PEER_PUSH_SIGNING_KEY,
        PUSH_RETRY_BASE_MS: "50",
        PUSH_RETRY_MAX_MS: "200",
      },
      store,
      peerHandlers,
    );
    const cardUrl = `${peerHost.baseUrl}/.well-known/agent-card.json`;
    const jwksUrl = `${peerHost.baseUrl}/.well-known/jwks.json`;
    const jwks = (await (await fetch(jwksUrl)).json()) as { keys: Array<Record<string, unknown>> };
    peerKid = String(jwks.keys[0]!["kid"]);
    const callerDir = await mkdtemp(join(tmpdir(), "a2a-jwks-caller-"));
    const peers: Record<string, Record<string, unknown>> = {
      // One per way our callback is registered: 1.0 (every binding shares it), 0.3 JSON-RPC, 0.3 a2a.v1 ProtoJSON.
      "jwks-10": { cardUrl, binding: "jsonrpc", protocolVersion: "1.0", credentials: { bearer: KEY }, jwksUrl },
      "jwks-03": { cardUrl, binding: "jsonrpc", protocolVersion: "0.3", credentials: { bearer: KEY }, jwksUrl },
      "jwks-03-rest": { cardUrl, binding: "http+json", protocolVersion: "0.3", credentials: { bearer: KEY }, jwksUrl },
      // B's keys pinned instead of its URL: the same.
      "jwks-pinned": { cardUrl, binding: "jsonrpc", protocolVersion: "1.0", credentials: { bearer: KEY }, jwks },
      // Configured as a peer that can only send static credentials: it is given the token as Bearer credentials,
      // sends it back, and its push is a hint that wakes the node (which reads B's task) rather than a refusal.
      "jwks-static": {
        cardUrl,
        binding: "jsonrpc",
        protocolVersion: "1.0",
        credentials: { bearer: KEY },
        jwksUrl,
        pushAuth: "static-bearer",
      },
    };
    for (const peer of Object.keys(peers)) {
      await writeFile(
        join(callerDir, `call-${peer}.json`),
        JSON.stringify({
          id: `call-${peer}`,
          name: `Call ${peer}`,
          description: "Calls B's hold skill, then marks the time.",
          nodes: [
            { kind: "a2a.invoke", id: "call", peer, skillId: "hold" },
            { kind: "task", id: "after", handler: "mark" },
          ],
        }),
      );
    }
    caller = await startLoggedApp(
      {
        DATA_DIR: await mkdtemp(join(tmpdir(), "a2a-jwks-caller-data-")),
        WORKFLOWS_DIR: callerDir,
        A2A_PEERS: JSON.stringify(peers),
        A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
        // Poll and backstop 60 s: within the test, only a push can move the run on.
        A2A_PEER_POLL_MS: "60000",
        A2A_PEER_BACKSTOP_POLL_MS: "60000",
        A2A_PEER_RETRY_BASE_MS: "20",
        A2A_PEER_RETRY_MAX_MS: "40",
        A2A_PEER_REQUEST_TIMEOUT_MS: "3000",
      },
      callerHandlers,
    );
  });

  afterAll(async () => {
    for (const release of gates.values()) release();
    await caller?.close();
    await peerHost?.close();
    await mongo?.db(dbName).dropDatabase();
    await mongo?.close();
  });

  const ours = jsonRpcCaller(() => caller.baseUrl, { blocking: false, waitMs: 15_000 });
  const progressOf = async (runId: string): Promise<Array<Record<string, any>>> =>
    (await caller.store.readEvents(runId, 0))
      .filter((e) => e.type === "node.progress")
      .map((e) => (e.payload as { progress: Record<string, any> }).progress);

  /** Starts `call-<peer>` on A and waits until B's task id is recorded (B holds it); the visit's token and a poster to A's callback. */
  async function startHeld(peer: string) {
    const text = `${peer} ${randomUUID()}`;
    const started = await ours.start(text, `call-${peer}`);
    const id = started["id"] as string;
    let progress: Array<Record<string, any>> = [];
    for (let i = 0; i < 250 && progress.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      progress = await progressOf(id);
    }
    expect(progress.length, "B's task id is recorded").toBeGreaterThan(0);
    const first = progress[0]!;
    const key = new PeerCallbackKey(
      (await loadPeerCallbackKey({ dataDir: caller.config.dataDir, production: false })).key,
    );
    const token = key.tokenFor(id, first["key"]);
    const post = (body: string, headers: Record<string, string>) =>
      fetch(`${caller.baseUrl}/v1/peer-callbacks/${id}`, {
        method: "POST",
        headers: { "content-type": "application/a2a+json", ...headers },
        body,
      });
    const completed = JSON.stringify({
      statusUpdate: {
        taskId: first["peerTaskId"],
        contextId: first["peerContextId"],
        status: { state: "TASK_STATE_COMPLETED", timestamp: new Date().toISOString() },
      },
    });
    return { id, text, first, token, post, completed };
  }

  /** Releases B's task and answers how long A took to move on after B's terminal commit, and A's progress. */
  async function releaseAndTime(h: { id: string; text: string; first: Record<string, any> }) {
    gate(h.text);
    gates.get(h.text)!();
    const task = await ours.waitFor(h.id, terminal, "a terminal state");
    const peerRecord = await peerHost.store.get(h.first["peerTaskId"]);
    const handoffMs = nextNodeAt.get(h.id)! - Date.parse(peerRecord!.updatedAt);
    return { task, handoffMs, progress: await progressOf(h.id) };
  }

  for (const peer of ["jwks-10", "jwks-03", "jwks-03-rest", "jwks-pinned"]) {
    it(`${peer}: B's pushes carry a JWT signed with B's key, A verifies it against B's ${peer === "jwks-pinned" ? "pinned jwks" : "jwksUrl"} and commits them; the run moves on within a second`, async () => {
      const h = await startHeld(peer);
      expect(h.first).toMatchObject({ notify: "push" });
      const r = await releaseAndTime(h);
      expect(r.task["status"].state, JSON.stringify(r.task["metadata"])).toBe("completed");
      console.log(`${peer}: handoff ${r.handoffMs} ms after B's terminal commit`);
      expect(r.handoffMs).toBeLessThan(1_000);
      // Committed by the receiver from a signed push (a poll or a wake never sets pushedAt with a state of the peer's).
      expect(
        r.progress.some((p) => p["pushedAt"] !== undefined && p["peerState"] === "completed"),
        JSON.stringify(r.progress),
      ).toBe(true);
      const logs = caller.logs();
      const mine = logs.split("\n").filter((l) => l.includes(h.id));
      expect(
        mine.filter((l) => l.includes("peer callback refused")),
        "no push of B's was refused",
      ).toEqual([]);
      expect(mine.some((l) => l.includes('"signedBy":"jwks"') && l.includes("committed"))).toBe(true);
      // The per-visit token is never logged.
      expect(logs).not.toContain(h.token);
    });
  }

  it('pushAuth "static-bearer": B sends the token back as a static Bearer; its push wakes the node, which reads B\'s task; the run moves on within a second', async () => {
    const h = await startHeld("jwks-static");
    expect(h.first).toMatchObject({ notify: "push" });
    const r = await releaseAndTime(h);
    expect(r.task["status"].state, JSON.stringify(r.task["metadata"])).toBe("completed");
    console.log(`jwks-static: handoff ${r.handoffMs} ms after B's terminal commit`);
    expect(r.handoffMs).toBeLessThan(1_000);
    // A hint: nothing of the push is committed; the node read B's task and recorded what B said.
    expect(r.progress.filter((p) => p["pushedAt"] !== undefined)).toEqual([]);
    expect(r.progress.at(-1)).toMatchObject({ peerState: "completed" });
    const mine = caller
      .logs()
      .split("\n")
      .filter((l) => l.includes(h.id));
    expect(mine.filter((l) => l.includes("peer callback refused"))).toEqual([]);
    expect(mine.some((l) => l.includes("peer push (unsigned) woke the node"))).toBe(true);
    expect(caller.logs()).not.toContain(h.token);
  });

  it("bad input: a JWKS peer's push with only the static token as Bearer, and one signed by another key under B's kid, are refused (401) and commit nothing; the host keeps serving and B's own push is heard", async () => {
    const h = await startHeld("jwks-10");
    const before = await progressOf(h.id);
    // Unsigned: what B sent before the fix (its callback registered with the token as static Bearer credentials):
    // the token as the notification token and as the Bearer, and B's HMAC signature, but no JWT.
    const at = Math.floor(Date.now() / 1000);
    const unsigned = await h.post(h.completed, {
      "x-a2a-notification-token": h.token,
      authorization: `Bearer ${h.token}`,
      "x-openwop-timestamp": String(at),
      "x-openwop-signature": signPushBody(PEER_PUSH_SIGNING_KEY, at, h.completed),
    });
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toEqual({ outcome: "unauthenticated" });
    // Signed by a key not in B's JWKS, under B's kid, covering exactly this body.
    const other = (await generateKeyPair("ES256")).privateKey;
    const forged = await new SignJWT({ taskId: h.first["peerTaskId"], request_body_sha256: sha256(h.completed) })
      .setProtectedHeader({ alg: "ES256", kid: peerKid, typ: "JWT" })
      .setIssuer(peerHost.baseUrl)
      .setAudience(`${caller.baseUrl}/v1/peer-callbacks/${h.id}`)
      .setIssuedAt()
      .setExpirationTime("5m")
      .setJti(randomUUID())
      .sign(other);
    const wrongKey = await h.post(h.completed, {
      "x-a2a-notification-token": h.token,
      authorization: `Bearer ${forged}`,
    });
    expect(wrongKey.status).toBe(401);
    expect(await wrongKey.json()).toEqual({ outcome: "unauthenticated" });
    // Nothing committed, the run still waits on B, and the host answers.
    expect(await progressOf(h.id)).toEqual(before);
    expect((await ours.get(h.id))["status"].state).toBe("working");
    expect((await fetch(`${caller.baseUrl}/.well-known/agent-card.json`)).status).toBe(200);
    const logs = caller.logs();
    expect(logs).not.toContain(h.token);
    expect(logs).not.toContain(forged);
    // B's genuine push is still heard at once.
    const r = await releaseAndTime(h);
    expect(r.task["status"].state).toBe("completed");
    expect(r.handoffMs).toBeLessThan(1_000);
  });
});
