import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { openwopClient } from "../support/openwop-client.js";
import { HOST_MAIN, startServerProcess, type ServerProcess } from "../support/server-process.js";

/**
 * Issue 40's repro, as a team met it: a task waits at gate `approve`; the host is restarted on MongoDB with the gate
 * renamed `review`; the approver's reply (A2A JSON-RPC) completes the old task on its old version, and a new task
 * runs the new one. Before workflow versions the reply was refused: -32602 node "approve" does not accept replies.
 */
const definition = (gate: string, sendHandler = "finalize-request") =>
  [
    "id: quote",
    "name: Quote",
    "description: drafts a quote, waits for approval, sends it",
    "nodes:",
    "  - { kind: task, id: prepare, handler: summarize-request }",
    `  - { kind: approval, id: ${gate}, title: Approve the quote, artifactFrom: prepare }`,
    `  - { kind: task, id: send, handler: ${sendHandler} }`,
    "",
  ].join("\n");

describe("a redeploy that renames a gate strands no task", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `redeploy_${randomUUID().slice(0, 8)}`;
  let mongo: MongoClient;
  let dir: string;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
    dir = await mkdtemp(join(tmpdir(), "redeploy-"));
  });
  afterAll(async () => {
    await server?.kill();
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  const start = async () =>
    startServerProcess({ MONGODB_URI: mongoUri, MONGODB_DB: dbName, WORKFLOWS_DIR: dir, BUILTIN_WORKFLOWS: "" });
  /** message/send on the A2A 0.3 JSON-RPC binding (blocking), as a stock client sends it; the whole answer. */
  const send = async (s: ServerProcess, message: Record<string, unknown>): Promise<any> => {
    const res = await fetch(`${s.baseUrl}/a2a/jsonrpc`, {
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
            metadata: { skillId: "quote" },
            ...message,
          },
        },
      }),
    });
    expect(res.status).toBe(200);
    return res.json();
  };

  it("the old task completes on its old version after the restart; a new task takes the new one", async () => {
    await writeFile(join(dir, "quote.yaml"), definition("approve"));
    server = await start();
    const created = await send(server, { parts: [{ kind: "text", text: "Quote 40 chairs" }] });
    expect(created.result).toMatchObject({ kind: "task", status: { state: "input-required" } });
    const oldTask = created.result.id as string;

    // The team renames the gate and restarts the host on the same database.
    await server.terminate();
    await writeFile(join(dir, "quote.yaml"), definition("review"));
    server = await start();
    // The start said which version live runs still use.
    const liveLine = server
      .output()
      .split("\n")
      .flatMap((line) => (line.startsWith("{") ? [JSON.parse(line) as Record<string, unknown>] : []))
      .find((line) => line["event"] === "workflow.version.live");
    expect(liveLine).toMatchObject({ workflowId: "quote", liveRuns: 1, deployed: false });
    expect(liveLine?.["msg"]).toMatch(
      /^workflow "quote" version "sha256-[0-9a-f]{16}": 1 live run \(an earlier version/,
    );

    const replied = await send(server, {
      taskId: oldTask,
      contextId: created.result.contextId,
      parts: [{ kind: "data", data: { action: "accept" } }],
    });
    expect(replied.error).toBeUndefined();
    expect(replied.result).toMatchObject({ id: oldTask, status: { state: "completed" } });

    const api = openwopClient(server.baseUrl);
    const events = (await api.call("GET", `/v1/runs/${oldTask}/events/poll?after=-1&timeoutMs=0`)).body
      .events as Array<{
      type: string;
      nodeId?: string;
    }>;
    expect(events.filter((e) => e.type === "node.resumed").map((e) => e.nodeId)).toEqual(["approve"]);
    expect(events.some((e) => e.nodeId === "review")).toBe(false);

    const fresh = await send(server, { parts: [{ kind: "text", text: "Quote 12 desks" }] });
    expect(fresh.result).toMatchObject({ kind: "task", status: { state: "input-required" } });
    const oldVersion = (await api.call("GET", `/v1/runs/${oldTask}`)).body.workflowVersion as string;
    const newRun = (await api.call("GET", `/v1/runs/${fresh.result.id}`)).body;
    expect(newRun).toMatchObject({ currentNodeId: "review" });
    expect(newRun.workflowVersion).toMatch(/^sha256-[0-9a-f]{16}$/);
    expect(newRun.workflowVersion).not.toBe(oldVersion);
    // Both definitions are stored, each under its own version.
    const stored = await mongo.db(dbName).collection("workflow_versions").find({ workflowId: "quote" }).toArray();
    expect(stored.map((v) => v["version"]).sort()).toEqual([oldVersion, newRun.workflowVersion].sort());
  });

  it("check, with MONGODB_URI, lists the versions live runs use and every node this deploy lacks for them", async () => {
    const db = `${dbName}_check`;
    const checkDir = await mkdtemp(join(tmpdir(), "redeploy-check-"));
    const handlersModule = join(checkDir, "handlers.mjs");
    await writeFile(
      handlersModule,
      "export const handlers = { 'send-quote': async () => ({ output: { sent: true } }) };\n",
    );
    await writeFile(join(checkDir, "quote.yaml"), definition("approve", "send-quote"));
    const env = { MONGODB_URI: mongoUri, MONGODB_DB: db, WORKFLOWS_DIR: checkDir, BUILTIN_WORKFLOWS: "" };
    const first = await startServerProcess({ ...env, HANDLERS_MODULE: handlersModule });
    try {
      const created = await send(first, { parts: [{ kind: "text", text: "Quote 3 lamps" }] });
      expect(created.result).toMatchObject({ status: { state: "input-required" } });
    } finally {
      await first.terminate();
    }
    // The next deploy drops the handler: the waiting run's version still needs it at node "send".
    await writeFile(join(checkDir, "quote.yaml"), definition("review"));
    const ran = await promisify(execFile)(process.execPath, ["--import", "tsx", HOST_MAIN, "check"], {
      env: { ...process.env, ...env, LOG_LEVEL: "info" },
    });
    const lines = ran.stdout
      .split("\n")
      .flatMap((line) => (line.startsWith("{") ? [JSON.parse(line) as Record<string, unknown>] : []));
    expect(lines.find((l) => l["event"] === "workflow.version.live")).toMatchObject({
      workflowId: "quote",
      liveRuns: 1,
      deployed: false,
    });
    const lacks = lines.find((l) => l["event"] === "workflow.version.lacks");
    expect(lacks).toMatchObject({ workflowId: "quote", nodeId: "send", version: expect.stringMatching(/^sha256-/) });
    expect(lacks?.["msg"]).toMatch(/needs what this deploy lacks: node "send": no handler named "send-quote"/);
    expect(lines.at(-1)?.["event"]).toBe("check.ok");
    await mongo.db(db).dropDatabase();
  });

  it("a SIGKILL while a move is in flight leaves the task on its old version or on its new one, whole, and it finishes", async () => {
    const db = `${dbName}_kill`;
    const killDir = await mkdtemp(join(tmpdir(), "redeploy-kill-"));
    const env = { MONGODB_URI: mongoUri, MONGODB_DB: db, WORKFLOWS_DIR: killDir, BUILTIN_WORKFLOWS: "" };
    await writeFile(join(killDir, "quote.yaml"), `version: "1"\n${definition("approve")}`);
    let host = await startServerProcess(env);
    const delays = [0, 3, 8, 15];
    const runs: string[] = [];
    for (const _ of delays)
      runs.push((await send(host, { parts: [{ kind: "text", text: "Quote" }] })).result.id as string);
    await host.terminate();
    await writeFile(join(killDir, "quote.yaml"), `version: "2"\n${definition("review")}`);
    host = await startServerProcess(env);
    try {
      for (const [i, delayMs] of delays.entries()) {
        const runId = runs[i]!;
        const inFlight = fetch(`${host.baseUrl}/host/openwop-a2a-host/runs/${runId}:move`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ toVersion: "2", nodes: { approve: "review" } }),
        }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, delayMs));
        const port = host.port;
        await host.kill();
        await inFlight;
        host = await startServerProcess(env, port);
        const api = openwopClient(host.baseUrl);
        const log = (await api.call("GET", `/v1/runs/${runId}/events/poll?after=-1&timeoutMs=0`)).body.events as Array<{
          type: string;
          sequence: number;
        }>;
        expect(log.map((e) => e.sequence)).toEqual(log.map((_e, n) => n));
        const moved = log.filter((e) => e.type === "openwop-a2a-host.run.moved");
        expect(moved.length).toBeLessThanOrEqual(1);
        // Whole either way: moved means version 2 (at its gate once it got there), not moved means version 1 at approve.
        const run = await api.waitForRun(runId, (r) => r.status === "waiting-approval");
        expect(run).toMatchObject(
          moved.length === 1
            ? { workflowVersion: "2", currentNodeId: "review" }
            : { workflowVersion: "1", currentNodeId: "approve" },
        );
        const gate = moved.length === 1 ? "review" : "approve";
        const approved = await api.call("POST", `/v1/runs/${runId}/interrupts/${gate}`, {
          resumeValue: { action: "accept" },
        });
        expect(approved.status).toBe(200);
        await api.waitForRun(runId, (r) => r.status === "completed");
      }
    } finally {
      await host.kill();
      await mongo.db(db).dropDatabase();
    }
  });

  it("two host processes with different deploys on one database finish every task on its own version", async () => {
    const db = `${dbName}_two`;
    const [dirOne, dirTwo] = [
      await mkdtemp(join(tmpdir(), "deploy-one-")),
      await mkdtemp(join(tmpdir(), "deploy-two-")),
    ];
    // Deploy one has the `send-quote` handler its version needs; deploy two renamed the gate and dropped it.
    const handlersModule = join(dirOne, "handlers.mjs");
    await writeFile(
      handlersModule,
      "export const handlers = { 'send-quote': async () => ({ output: { sent: 'v1' } }) };\n",
    );
    await mkdir(join(dirOne, "flows"));
    await writeFile(join(dirOne, "flows", "quote.yaml"), `version: "1"\n${definition("approve", "send-quote")}`);
    await writeFile(join(dirTwo, "quote.yaml"), `version: "2"\n${definition("review")}`);
    const common = {
      MONGODB_URI: mongoUri,
      MONGODB_DB: db,
      BUILTIN_WORKFLOWS: "",
      LEASE_TTL_MS: "1500",
      LEASE_HEARTBEAT_MS: "200",
    };
    const one = await startServerProcess({
      ...common,
      WORKFLOWS_DIR: join(dirOne, "flows"),
      HANDLERS_MODULE: handlersModule,
    });
    const two = await startServerProcess({ ...common, WORKFLOWS_DIR: dirTwo });
    try {
      const started: Array<{ runId: string; version: string; gate: string }> = [];
      for (let i = 0; i < 3; i++) {
        started.push({
          runId: (await send(one, { parts: [{ kind: "text", text: `v1 #${i}` }] })).result.id,
          version: "1",
          gate: "approve",
        });
        started.push({
          runId: (await send(two, { parts: [{ kind: "text", text: `v2 #${i}` }] })).result.id,
          version: "2",
          gate: "review",
        });
      }
      // Every reply goes to the other deploy.
      for (const { runId, version, gate } of started) {
        const other = version === "1" ? two : one;
        const reply = await openwopClient(other.baseUrl).call("POST", `/v1/runs/${runId}/interrupts/${gate}`, {
          resumeValue: { action: "accept" },
        });
        expect(reply.status).toBe(200);
      }
      const api = openwopClient(one.baseUrl);
      for (const { runId, version, gate } of started) {
        const done = await api.waitForRun(runId, (r) => r.status === "completed", 20_000);
        expect(done.workflowVersion).toBe(version);
        const log = (await api.call("GET", `/v1/runs/${runId}/events/poll?after=-1&timeoutMs=0`)).body.events as Array<{
          type: string;
          nodeId?: string;
        }>;
        expect(log.filter((e) => e.type === "node.resumed").map((e) => e.nodeId)).toEqual([gate]);
        expect(log.some((e) => e.type === "run.failed")).toBe(false);
      }
    } finally {
      await Promise.all([one.kill(), two.kill()]);
      await mongo.db(db).dropDatabase();
    }
  });
});
