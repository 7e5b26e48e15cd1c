// Several host processes on one database (the wire-protocol test server): task execution leases. The
// instance that runs a task dies (SIGKILL) or freezes (SIGSTOP) inside a slow node; another instance takes
// the task over once the lease expires and completes it; a frozen owner's late commit is refused (fencing).
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { openwopClient } from "../support/openwop-client.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

const TTL_MS = 1_500;
const HEARTBEAT_MS = 300;
const NODE_MS = 2_000;

interface StoredEvent {
  type: string;
  sequence: number;
  nodeId?: string;
  payload: Record<string, unknown>;
}

describe("task execution leases across host processes", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `leases_${randomUUID().slice(0, 8)}`;
  let mongo: MongoClient;
  let workflowsDir: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
    workflowsDir = await mkdtemp(join(tmpdir(), "leases-"));
    await writeFile(
      join(workflowsDir, "slow.yaml"),
      `id: slow\nname: Slow\ndescription: one slow node\nnodes:\n  - { kind: task, id: work, handler: wait-until-cancelled, params: { ms: ${NODE_MS} } }\n`,
    );
    await writeFile(
      join(workflowsDir, "endless.yaml"),
      "id: endless\nname: Endless\ndescription: runs until cancelled\nnodes:\n  - { kind: task, id: work, handler: wait-until-cancelled, params: { ms: 600000 } }\n",
    );
  });
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.child.kill("SIGCONT");
      await s.kill();
    }
  });
  afterAll(async () => {
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  const start = async (instanceId: string) => {
    const server = await startServerProcess({
      MONGODB_URI: mongoUri,
      MONGODB_DB: dbName,
      WORKFLOWS_DIR: workflowsDir,
      TIMER_POLL_MS: "100",
      INSTANCE_ID: instanceId,
      LEASE_TTL_MS: String(TTL_MS),
      LEASE_HEARTBEAT_MS: String(HEARTBEAT_MS),
    });
    servers.push(server);
    return server;
  };

  /** The committed log (events up to the head's version). */
  async function committedLog(runId: string): Promise<StoredEvent[]> {
    const head = await mongo.db(dbName).collection<{ _id: string; version: number }>("tasks").findOne({ _id: runId });
    const docs = await mongo
      .db(dbName)
      .collection<StoredEvent & { taskId: string }>("task_events")
      .find({ taskId: runId })
      .sort({ sequence: 1 })
      .toArray();
    return docs.filter((d) => d.sequence <= (head?.version ?? -1));
  }

  async function startSlowRunOn(owner: ServerProcess, ownerId: string): Promise<string> {
    const runId = await openwopClient(owner.baseUrl).startRun("slow");
    // The creating write took the lease: the snapshot names the owner while the node runs.
    const running = await openwopClient(owner.baseUrl).waitForRun(
      runId,
      (s) => s.status === "running" && s.lease !== undefined,
    );
    expect(running.lease).toMatchObject({ instanceId: ownerId, epoch: 1 });
    return runId;
  }

  function expectOneCleanRun(log: StoredEvent[]): void {
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
    expect(log.filter((e) => e.type === "run.started")).toHaveLength(1);
    expect(log.filter((e) => e.type === "node.completed")).toHaveLength(1);
    expect(log.filter((e) => e.type === "run.completed")).toHaveLength(1);
    expect(log.at(-1)?.type).toBe("run.completed");
  }

  it("SIGKILL of the owner inside a node: the other instance takes the task over after the lease expires and completes it once", async () => {
    const a = await start("host-a");
    const b = await start("host-b");
    const runId = await startSlowRunOn(a, "host-a");
    // B sees the task and who drives it, and leaves it alone while the lease is live.
    expect((await openwopClient(b.baseUrl).call("GET", `/v1/runs/${runId}`)).body.lease).toMatchObject({
      instanceId: "host-a",
    });
    await a.kill();
    const done = await openwopClient(b.baseUrl).waitForRun(
      runId,
      (s) => s.status === "completed",
      TTL_MS + NODE_MS + 10_000,
    );
    expect(done.lease).toBeUndefined();
    const log = await committedLog(runId);
    expectOneCleanRun(log);
    // At-least-once: the node started again on B (attempt 2), after A's attempt 1 was lost with A.
    expect(log.filter((e) => e.type === "node.started").map((e) => e.payload["attempt"])).toEqual([1, 2]);
    // A's execution died with A (its lease was never given back): not charged, since it may not have been its
    // doing; B ran it again alone on B (a suspect) and it completed, so nothing counts toward RECOVERY_MAX_ATTEMPTS.
    expect(log.filter((e) => e.type === "node.interrupted").map((e) => e.payload)).toEqual([
      { nodeId: "work", attempt: 1, crashes: 0, charged: false, cause: "instance-died" },
    ]);
    expect(log.filter((e) => e.type === "node.started").map((e) => e.payload["isolated"])).toEqual([undefined, true]);
    expect(b.output()).toContain("taking over runnable tasks with a free or expired lease");
  });

  it("SIGSTOP the owner past its lease: the other instance takes over and completes; on SIGCONT the frozen owner's commit is refused", async () => {
    const a = await start("host-c");
    const b = await start("host-d");
    const runId = await startSlowRunOn(a, "host-c");
    a.child.kill("SIGSTOP");
    const done = await openwopClient(b.baseUrl).waitForRun(
      runId,
      (s) => s.status === "completed",
      TTL_MS + NODE_MS + 10_000,
    );
    expect(done.status).toBe("completed");
    const before = await committedLog(runId);
    a.child.kill("SIGCONT");
    // A's node finishes right away (its timer is long due) and its fenced commit meets B's lease.
    const deadline = Date.now() + 10_000;
    while (!a.output().includes("task lease lost") && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(a.output()).toContain("task lease lost");
    const after = await committedLog(runId);
    expect(after).toEqual(before);
    expectOneCleanRun(after);
    expect(
      (
        await mongo
          .db(dbName)
          .collection("tasks")
          .findOne({ _id: runId as never })
      )?.["leaseOwner"] ?? null,
    ).toBeNull();
  });

  it("SIGTERM of the owner releases its leases: the other instance takes over without waiting for the TTL", async () => {
    const a = await start("host-e");
    const b = await start("host-f");
    const runId = await startSlowRunOn(a, "host-e");
    expect(await a.terminate()).toBe(0);
    const released = await mongo
      .db(dbName)
      .collection("tasks")
      .findOne({ _id: runId as never });
    // Given back on shutdown, or already taken by B.
    expect([null, "host-f"]).toContain(released?.["leaseOwner"] ?? null);
    const done = await openwopClient(b.baseUrl).waitForRun(runId, (s) => s.status === "completed", NODE_MS + 10_000);
    expect(done.status).toBe("completed");
    const log = await committedLog(runId);
    expectOneCleanRun(log);
    // A graceful stop gave the lease back: the node runs again, but that is no poison attempt.
    expect(log.map((e) => e.type)).not.toContain("node.interrupted");
  });

  it("a cancel sent to another instance stops the owner's running node (its heartbeat sees the cancel)", async () => {
    const a = await start("host-g");
    const b = await start("host-h");
    const runId = await openwopClient(a.baseUrl).startRun("endless");
    await openwopClient(a.baseUrl).waitForRun(runId, (s) => s.status === "running" && s.lease?.instanceId === "host-g");
    const res = await openwopClient(b.baseUrl).call("POST", `/v1/runs/${runId}/cancel`, { reason: "stop from b" });
    expect(res.body.status).toBe("cancelling");
    // The node would run for ten minutes: only A aborting it ends the run.
    const done = await openwopClient(b.baseUrl).waitForRun(runId, (s) => s.status === "cancelled", 10_000);
    expect(done.lease).toBeUndefined();
    const log = await committedLog(runId);
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
    expect(log.filter((e) => e.type === "run.cancelled")).toHaveLength(1);
  });

  it("a bad lease configuration is refused at start with a clear message", async () => {
    const refused = startServerProcess({
      MONGODB_URI: mongoUri,
      MONGODB_DB: dbName,
      LEASE_TTL_MS: "1000",
      LEASE_HEARTBEAT_MS: "600",
    });
    await expect(refused).rejects.toThrow(/LEASE_TTL_MS \(1000\) must be more than twice LEASE_HEARTBEAT_MS \(600\)/);
  });
});
