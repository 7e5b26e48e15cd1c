// SIGKILL of the peer while our a2a.invoke nodes wait on it: the peer is a real process (src/main.ts) on MongoDB
// whose skill waits on a durable timer; two of our hosts (in this process) call it over A2A 1.0 JSON-RPC, one
// learning by push, one by stream, both with a 60 s poll interval. The peer is killed mid-wait and restarted
// on the same port: its stored push config still points at our callback (the completion is pushed after the
// restart), and our stream re-attaches (SubscribeToTask again, the Task first). Both runs complete well before
// the 60 s backstop, with one send each.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { startCountingProxy, type CountingProxy } from "../support/counting-proxy.js";
import { freePort, startServerProcess, type ServerProcess } from "../support/server-process.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const KEY = "peer-restart-key-0123456789abcdef";

describe("a2a.invoke by push and by stream across a SIGKILL of the peer", () => {
  const mongoUri = inject("mongoUri");
  const peerDb = `peer_restart_${randomUUID().slice(0, 8)}`;
  let mongo: MongoClient;
  let proxy: CountingProxy;
  let peer: ServerProcess | undefined;
  let peerEnv: Record<string, string>;
  let peerPort: number;
  const callers: Partial<Record<"push" | "stream", TestApp>> = {};

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
    const peerDir = await mkdtemp(join(tmpdir(), "peer-restart-peer-"));
    await writeFile(
      join(peerDir, "slow.json"),
      JSON.stringify({
        id: "slow",
        name: "Slow",
        description: "Waits on a durable timer, then echoes.",
        nodes: [
          { kind: "delay", id: "wait", durationMs: 2500 },
          { kind: "task", id: "work", handler: "echo" },
        ],
      }),
    );
    peerPort = await freePort();
    proxy = await startCountingProxy(peerPort);
    peerEnv = {
      MONGODB_URI: mongoUri,
      MONGODB_DB: peerDb,
      NODE_ENV: "test",
      INSTANCE_ID: "restarting-peer",
      PUBLIC_URL: proxy.url,
      WORKFLOWS_DIR: peerDir,
      TIMER_POLL_MS: "100",
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
      PUSH_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      PUSH_SIGNING_KEY: randomBytes(24).toString("base64url"),
    };
    peer = await startServerProcess(peerEnv, peerPort);
    const callerDir = await mkdtemp(join(tmpdir(), "peer-restart-caller-"));
    await writeFile(
      join(callerDir, "call-slow.json"),
      JSON.stringify({
        id: "call-slow",
        name: "Call slow",
        description: "a2a.invoke, then noop.",
        nodes: [
          { kind: "a2a.invoke", id: "call", peer: "peer", skillId: "slow" },
          { kind: "task", id: "after", handler: "noop" },
        ],
      }),
    );
    const base = {
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
      A2A_PEER_RETRY_BASE_MS: "50",
      A2A_PEER_RETRY_MAX_MS: "200",
    };
    callers.push = await startTestApp(base);
    callers.stream = await startTestApp({ ...base, A2A_PEER_PUSH: "false" });
  });

  afterAll(async () => {
    for (const caller of Object.values(callers)) await caller?.close();
    await peer?.kill();
    await proxy?.close();
    await mongo?.db(peerDb).dropDatabase();
    await mongo?.close();
  });

  it("both runs complete after the peer's restart, before the backstop, with one send each", async () => {
    const rpc = async (caller: TestApp, method: string, params: unknown) => {
      const res = await fetch(`${caller.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      return ((await res.json()) as { result?: any }).result;
    };
    const start = (caller: TestApp, text: string) =>
      rpc(caller, "message/send", {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text }],
          metadata: { skillId: "call-slow" },
        },
        configuration: { blocking: false },
      });
    const runs = { push: await start(callers.push!, "by push"), stream: await start(callers.stream!, "by stream") };
    const progressOf = async (path: "push" | "stream") =>
      (await callers[path]!.store.readEvents(runs[path]["id"], 0))
        .filter((e) => e.type === "node.progress")
        .map((e) => (e.payload as { progress: Record<string, any> }).progress);
    for (let i = 0; i < 300; i++) {
      if ((await progressOf("push")).length > 0 && (await progressOf("stream")).length > 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await progressOf("push"))[0]).toMatchObject({ notify: "push" });
    expect((await progressOf("stream"))[0]).toMatchObject({ notify: "stream" });
    expect(proxy.count("SendMessage")).toBe(2);
    await new Promise((r) => setTimeout(r, 300));

    await peer!.kill();
    await new Promise((r) => setTimeout(r, 500));
    const restartedAt = Date.now();
    peer = await startServerProcess(peerEnv, peerPort);

    const states: Record<string, string> = {};
    for (let i = 0; i < 1500; i++) {
      for (const path of ["push", "stream"] as const)
        states[path] = (await rpc(callers[path]!, "tasks/get", { id: runs[path]["id"] }))["status"].state;
      if (["push", "stream"].every((p) => ["completed", "failed", "canceled"].includes(states[p]!))) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(states).toEqual({ push: "completed", stream: "completed" });
    expect(Date.now() - restartedAt, "well before the 60 s backstop poll").toBeLessThan(30_000);
    expect(proxy.count("SendMessage")).toBe(2);
    // The stream was re-attached after the peer came back; the push run read the finished task once.
    expect(proxy.count("SubscribeToTask")).toBeGreaterThanOrEqual(2);
    expect(proxy.count("GetTask")).toBeLessThanOrEqual(2);
    for (const path of ["push", "stream"] as const) {
      const task = await rpc(callers[path]!, "tasks/get", { id: runs[path]["id"] });
      expect(JSON.stringify(task["artifacts"])).toContain(`by ${path}`);
    }
  }, 120_000);
});
