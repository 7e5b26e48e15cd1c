// An a2a.invoke node that learns by push survives SIGKILL of its own host while the peer finishes: the peer's
// push finds nobody (it retries), the restarted host resumes the node with one catch-up GetTask, finds the peer
// task completed and moves on, long before the 60 s backstop poll; the message is never sent again, and the
// peer's retried push is acknowledged without a second commit. The caller is a real process (src/main.ts) on
// MongoDB; the peer is a host of ours in this process behind a counting proxy.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { startCountingProxy, type CountingProxy } from "../support/counting-proxy.js";
import { freePort, startServerProcess, type ServerProcess } from "../support/server-process.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const KEY = "restart-caller-key-0123456789abcdef";
const gates = new Map<string, () => void>();
const held = new Map<string, Promise<void>>();
const gate = (text: string) => {
  if (!held.has(text)) held.set(text, new Promise<void>((resolve) => gates.set(text, resolve)));
  return held.get(text)!;
};

describe("a2a.invoke by push across a SIGKILL of the caller", () => {
  const mongoUri = inject("mongoUri");
  const peerDb = `push_restart_peer_${randomUUID().slice(0, 8)}`;
  const callerDb = `push_restart_caller_${randomUUID().slice(0, 8)}`;
  let mongo: MongoClient;
  let peerHost: TestApp;
  let proxy: CountingProxy;
  let caller: ServerProcess | undefined;
  let callerEnv: Record<string, string>;

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
    const store = new MongoTaskStore(mongo, mongo.db(peerDb));
    await store.init();
    const peerDir = await mkdtemp(join(tmpdir(), "push-restart-peer-"));
    await writeFile(
      join(peerDir, "hold.json"),
      JSON.stringify({
        id: "hold",
        name: "Hold",
        description: "Works until released.",
        nodes: [{ kind: "task", id: "work", handler: "hold" }],
      }),
    );
    const hold: TaskHandler = async (ctx) => {
      await gate(ctx.input.text);
      return {
        output: { text: "done" },
        artifacts: [{ name: "held", parts: [{ kind: "text", text: `held ${ctx.input.text}` }] }],
      };
    };
    const peerPort = await freePort();
    proxy = await startCountingProxy(peerPort);
    peerHost = await startTestApp(
      {
        PORT: String(peerPort),
        PUBLIC_URL: proxy.url,
        WORKFLOWS_DIR: peerDir,
        API_KEYS: JSON.stringify([
          {
            id: "caller",
            tenant: "acme",
            scopes: ["runs:create", "runs:read", "runs:cancel", "webhooks:manage"],
            key: KEY,
          },
        ]),
        PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
        PUSH_RETRY_BASE_MS: "50",
        PUSH_RETRY_MAX_MS: "200",
      },
      store,
      { hold },
    );
    const callerDir = await mkdtemp(join(tmpdir(), "push-restart-caller-"));
    await writeFile(
      join(callerDir, "call-hold.json"),
      JSON.stringify({
        id: "call-hold",
        name: "Call hold",
        description: "a2a.invoke, then noop.",
        nodes: [
          { kind: "a2a.invoke", id: "call", peer: "peer", skillId: "hold" },
          { kind: "task", id: "after", handler: "noop" },
        ],
      }),
    );
    callerEnv = {
      MONGODB_URI: mongoUri,
      MONGODB_DB: callerDb,
      NODE_ENV: "test",
      INSTANCE_ID: "push-restart-caller",
      WORKFLOWS_DIR: callerDir,
      A2A_PEERS: JSON.stringify({
        peer: {
          cardUrl: `${proxy.url}/.well-known/agent-card.json`,
          binding: "jsonrpc",
          protocolVersion: "1.0",
          credentials: { bearer: KEY },
        },
      }),
      A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
      A2A_PEER_POLL_MS: "60000",
      // The callback tokens derive from this key: the same key after the restart.
      A2A_PEER_CALLBACK_KEY: randomBytes(32).toString("hex"),
      PUSH_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      PUSH_SIGNING_KEY: randomBytes(24).toString("base64url"),
    };
  });

  afterAll(async () => {
    for (const release of gates.values()) release();
    await caller?.kill();
    await peerHost?.close();
    await proxy?.close();
    await mongo?.db(peerDb).dropDatabase();
    await mongo?.db(callerDb).dropDatabase();
    await mongo?.close();
  });

  const rpc = async (method: string, params: unknown) => {
    const res = await fetch(`${caller!.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return ((await res.json()) as { result?: any }).result;
  };

  it("the peer completes while we are down; after the restart the catch-up GetTask finds it, with no second send", async () => {
    caller = await startServerProcess(callerEnv);
    const port = caller.port;
    const text = `restart ${randomUUID()}`;
    void gate(text);
    const started = await rpc("message/send", {
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        parts: [{ kind: "text", text }],
        metadata: { skillId: "call-hold" },
      },
      configuration: { blocking: false },
    });
    const callerStore = new MongoTaskStore(mongo, mongo.db(callerDb));
    let progress: Record<string, any> | undefined;
    for (let i = 0; i < 500 && !progress; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const found = (await callerStore.readEvents(started["id"], 0)).find((e) => e.type === "node.progress");
      progress = found ? (found.payload as { progress: Record<string, any> }).progress : undefined;
    }
    expect(progress, "the peer's task id was recorded").toBeDefined();
    expect(progress!["notify"]).toBe("push");
    expect(proxy.count("SendMessage")).toBe(1);

    await caller.kill();
    proxy.reset();
    gates.get(text)!();
    const peerStore = new MongoTaskStore(mongo, mongo.db(peerDb));
    for (let i = 0; i < 500; i++) {
      const peerTask = await peerStore.get(progress!["peerTaskId"]);
      if (peerTask?.a2a.state === "completed") break;
      await new Promise((r) => setTimeout(r, 20));
    }
    // The peer's push finds nobody for a moment (it retries); then we come back on the same port.
    await new Promise((r) => setTimeout(r, 300));
    const restartedAt = Date.now();
    caller = await startServerProcess(callerEnv, port);
    let task: Record<string, any> | undefined;
    for (let i = 0; i < 1000; i++) {
      task = await rpc("tasks/get", { id: started["id"] });
      if (task && ["completed", "failed", "canceled"].includes(task["status"].state)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(task!["status"].state, JSON.stringify(task!["metadata"])).toBe("completed");
    expect(Date.now() - restartedAt, "well before the 60 s backstop").toBeLessThan(30_000);
    expect(JSON.stringify(task!["artifacts"])).toContain(`held ${text}`);
    // Never sent again; the node caught up by reading the peer's task.
    expect(proxy.count("SendMessage")).toBe(0);
    expect(proxy.count("GetTask")).toBeGreaterThanOrEqual(1);
  }, 90_000);
});
