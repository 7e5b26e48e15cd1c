// OpenWOP RFC 0158 (durable execution and disaster-recovery qualification), the `durable-multi-instance` rows,
// with real host processes on one database and real SIGKILLs (§D.9: no rung from tests in which no process
// died). The recovery bound is read from the discovery document (`recoveryEvidence`, derived from
// LEASE_TTL_MS + LEASE_HEARTBEAT_MS) and each kill row measures kill → resumption (§"Witnessing": the first
// observation that the work is re-executed, never time to completion) against it. Rows:
// - kill-after-accept: the accepting process dies after the task is stored and before its node is dispatched
//   (dispatch held by the store's kill seam, which kills the process inside the node.started write); a peer
//   dispatches it.
// - kill-during-execution + peer-resume + duplicate-delivery: the process running a node dies; a different
//   process resumes it with the same effect identity; the receiver keeps one effect per identity, and the
//   same message delivered again (to either instance) starts no second run and no second effect.
// - poison-exhaustion: a node that SIGKILLs its own process dies once uncharged (any work beside it might have
//   killed the process), then runs alone RECOVERY_MAX_ATTEMPTS times across restarts, each death charged, then
//   the run fails (`poison_exhausted`) on tasks/get, GET /v1/runs/{id} and /metrics; the host stays up, no
//   instance takes the task again, and other tasks complete. At most RECOVERY_MAX_ATTEMPTS + 1 executions.
// docs/operating.md "RFC 0158 evidence" maps each row to the assertions here.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { openwopClient } from "../support/openwop-client.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

const TTL_MS = 1_500;
const HEARTBEAT_MS = 300;
const MAX_ATTEMPTS = 3;
const EFFECTS = "rfc0158_effects";
const FIXTURES = join(import.meta.dirname, "..", "fixtures");

interface StoredEvent {
  type: string;
  sequence: number;
  nodeId?: string;
  timestamp: string;
  payload: Record<string, unknown>;
}
interface Invocation {
  taskId: string;
  nodeId: string;
  attempt: number;
  idempotencyKey: string;
  instanceId: string;
}

describe("OpenWOP RFC 0158 durability rows across host processes", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `rfc0158_${randomUUID().slice(0, 8)}`;
  let mongo: MongoClient;
  const servers: ServerProcess[] = [];
  /** Measured kill → resumption intervals, printed at the end (the figures docs/operating.md records). */
  const measured: string[] = [];

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
  });
  afterEach(async () => {
    for (const s of servers.splice(0)) if (s.child.exitCode === null && s.child.signalCode === null) await s.kill();
  });
  afterAll(async () => {
    if (measured.length > 0)
      console.info(`RFC 0158 kill → resumption (bound ${TTL_MS + HEARTBEAT_MS} ms):\n  ${measured.join("\n  ")}`);
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  const env = (instanceId: string, extra: Record<string, string> = {}) => ({
    MONGODB_URI: mongoUri,
    MONGODB_DB: dbName,
    WORKFLOWS_DIR: join(FIXTURES, "durability-workflows"),
    BUILTIN_WORKFLOWS: "demo",
    HANDLERS_MODULE: join(FIXTURES, "durability-handlers.ts"),
    EFFECTS_COLLECTION: EFFECTS,
    TIMER_POLL_MS: "100",
    INSTANCE_ID: instanceId,
    LEASE_TTL_MS: String(TTL_MS),
    LEASE_HEARTBEAT_MS: String(HEARTBEAT_MS),
    RECOVERY_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    ...extra,
  });
  const start = async (instanceId: string, extra: Record<string, string> = {}) => {
    const server = await startServerProcess(env(instanceId, extra));
    servers.push(server);
    return server;
  };
  /** When the process exited (SIGKILL: by itself, or by the test). */
  const exitTime = (server: ServerProcess): Promise<number> =>
    new Promise((resolve) =>
      server.child.exitCode !== null || server.child.signalCode !== null
        ? resolve(Date.now())
        : server.child.once("exit", () => resolve(Date.now())),
    );

  async function send(
    server: ServerProcess,
    message: Record<string, unknown>,
    blocking = false,
  ): Promise<{
    result?: { id: string; status: { state: string; message?: unknown }; metadata?: Record<string, any> };
    error?: unknown;
  }> {
    const res = await fetch(`${server.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: { message: { kind: "message", role: "user", ...message }, configuration: { blocking } },
      }),
    });
    return (await res.json()) as never;
  }
  const message = (skillId: string, contextId = randomUUID(), messageId = randomUUID()) => ({
    messageId,
    contextId,
    parts: [{ kind: "text", text: "go" }],
    metadata: { skillId },
  });

  const taskOf = async (contextId: string, ms = 10_000): Promise<string> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const head = await mongo
        .db(dbName)
        .collection<{ _id: string; contextId: string }>("tasks")
        .findOne({ contextId });
      if (head) return head._id;
      if (Date.now() > deadline) throw new Error(`no task with context ${contextId}`);
      await new Promise((r) => setTimeout(r, 25));
    }
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
  async function until<T>(read: () => Promise<T | undefined>, what: string, ms: number): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = await read();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const invocations = (taskId: string) =>
    mongo.db(dbName).collection<Invocation>(EFFECTS).find({ taskId }).sort({ attempt: 1 }).toArray();
  const receipts = (key: string) =>
    mongo
      .db(dbName)
      .collection<{ _id: string; deliveries: number }>(`${EFFECTS}_receipts`)
      .find({ _id: key })
      .toArray();

  /** The published recovery bound (RFC 0158 §B.4), as the discovery document declares it. */
  async function publishedBound(server: ServerProcess): Promise<number> {
    const doc = (await (await fetch(`${server.baseUrl}/.well-known/openwop`)).json()) as {
      recoveryEvidence: {
        recoveryBounds: Array<{ class: string; bound: number; terms: Array<{ name: string; ms: number }> }>;
        attemptBound: { maxAttempts: number };
      };
    };
    const [lease] = doc.recoveryEvidence.recoveryBounds;
    // §B.5 bound-is-derived: the number is the sum of the settings that produce it.
    expect(lease).toEqual({
      class: "task-execution-lease",
      bound: TTL_MS + HEARTBEAT_MS,
      terms: [
        { name: "leaseTtlMs", ms: TTL_MS },
        { name: "leaseHeartbeatMs", ms: HEARTBEAT_MS },
      ],
    });
    expect(doc.recoveryEvidence.attemptBound.maxAttempts).toBe(MAX_ATTEMPTS);
    return lease!.bound;
  }

  it("kill-after-accept: the task is stored, its dispatch dies with the process, and a peer dispatches it within the bound", async () => {
    // A dies inside the write of node.started (events stored, head not moved): accepted, never dispatched.
    const a = await start("accept-a", { OPENWOP_TEST_KILL_AFTER_EVENTS_WRITE: "node.started" });
    const b = await start("accept-b");
    const bound = await publishedBound(b);
    const contextId = randomUUID();
    const died = exitTime(a);
    await send(a, message("effect", contextId)).catch(() => undefined); // answered, or cut off by the kill
    const killedAt = await died;
    expect(a.child.signalCode).toBe("SIGKILL");
    const taskId = await taskOf(contextId);
    const before = await committedLog(taskId);
    expect(before.map((e) => e.type)).toEqual(["run.created", "run.started"]); // accepted; dispatch not committed
    expect(await invocations(taskId)).toEqual([]);

    const started = await until(
      async () => (await committedLog(taskId)).find((e) => e.type === "node.started"),
      "the peer's dispatch",
      10 * bound,
    );
    const resumedMs = Date.parse(started.timestamp) - killedAt;
    measured.push(`kill-after-accept (peer dispatch): ${resumedMs} ms`);
    expect(resumedMs).toBeLessThanOrEqual(bound);
    const done = await openwopClient(b.baseUrl).waitForRun(taskId, (s) => s.status === "completed", 15_000);
    expect(done.status).toBe("completed");
    const runs = await invocations(taskId);
    expect(runs.map((r) => [r.instanceId, r.attempt])).toEqual([["accept-b", 1]]);
    // Nothing had started, so nothing counts as a crashed attempt.
    expect((await committedLog(taskId)).map((e) => e.type)).not.toContain("node.interrupted");
  }, 90_000);

  it("kill-during-execution, peer-resume, duplicate-delivery: another process resumes within the bound with the same effect identity; the effect lands once per identity", async () => {
    const a = await start("exec-a");
    const b = await start("exec-b");
    const bound = await publishedBound(b);
    const contextId = randomUUID();
    const messageId = randomUUID();
    const accepted = await send(a, message("effect", contextId, messageId));
    const taskId = accepted.result!.id;
    await until(async () => ((await invocations(taskId)).length > 0 ? true : undefined), "the first execution", 10_000);
    expect((await openwopClient(b.baseUrl).call("GET", `/v1/runs/${taskId}`)).body.lease).toMatchObject({
      instanceId: "exec-a",
    });
    const died = exitTime(a);
    await a.kill();
    const killedAt = await died;

    // Resumption: the peer's node.interrupted, committed with the node's next start (before it runs again).
    const interrupted = await until(
      async () => (await committedLog(taskId)).find((e) => e.type === "node.interrupted"),
      "the peer's resumption",
      10 * bound,
    );
    const resumedMs = Date.parse(interrupted.timestamp) - killedAt;
    measured.push(`kill-during-execution (peer resume): ${resumedMs} ms`);
    expect(resumedMs).toBeLessThanOrEqual(bound);
    // Not charged (it died beside whatever else ran there): it runs again alone on the peer, and completes.
    expect(interrupted.payload).toMatchObject({ nodeId: "deliver", attempt: 1, crashes: 0, charged: false });
    const done = await openwopClient(b.baseUrl).waitForRun(taskId, (s) => s.status === "completed", 15_000);
    expect(done.status).toBe("completed");

    // Peer resume: a different process ran the second execution; the same identity both times.
    const runs = await invocations(taskId);
    expect(runs.map((r) => [r.instanceId, r.attempt])).toEqual([
      ["exec-a", 1],
      ["exec-b", 2],
    ]);
    expect(new Set(runs.map((r) => r.idempotencyKey))).toEqual(new Set([`${taskId}:deliver:1`]));
    // Duplicate delivery, counted per effect identity where it lands: one effect, however often it was delivered.
    const landed = await receipts(`${taskId}:deliver:1`);
    expect(landed).toHaveLength(1);
    expect(landed[0]!.deliveries).toBe(runs.length);
    // The same accepted work delivered again, to either instance: the same run, no second execution or effect.
    const c = await start("exec-c");
    for (const target of [b, c]) {
      const again = await send(target, message("effect", contextId, messageId), true);
      expect(again.result?.id).toBe(taskId);
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(await invocations(taskId)).toHaveLength(2);
    const log = await committedLog(taskId);
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
    expect(log.filter((e) => e.type === "run.started")).toHaveLength(1);
    expect(log.filter((e) => e.type === "run.completed")).toHaveLength(1);
  }, 90_000);

  it("poison-exhaustion: a node that kills its process runs alone RECOVERY_MAX_ATTEMPTS times after its first death, then the run fails for good and the host stays up", async () => {
    /** One start of the host with a stable INSTANCE_ID; resolves when it died (SIGKILL by its node) or stayed up for `upMs`. */
    const life = async (upMs: number): Promise<{ server?: ServerProcess; died: boolean }> => {
      let server: ServerProcess;
      try {
        server = await start("poison-host");
      } catch (err) {
        if (/exited with/.test(String(err))) return { died: true }; // died during start-up, before it listened
        throw err;
      }
      const died = await Promise.race([
        exitTime(server).then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), upMs)),
      ]);
      return { server, died };
    };

    const first = await start("poison-host");
    const contextId = randomUUID();
    const died = exitTime(first);
    await send(first, message("poison", contextId)).catch(() => undefined);
    await died;
    expect(first.child.signalCode).toBe("SIGKILL");
    const taskId = await taskOf(contextId);
    // Every restart takes its own lease back at once and runs the node again, alone, which kills it again ...
    for (let restart = 2; restart <= MAX_ATTEMPTS + 1; restart++) {
      const { died: gone } = await life(20_000);
      expect(gone, `start ${restart} dies in its poison node`).toBe(true);
    }
    expect((await invocations(taskId)).map((r) => r.attempt)).toEqual([1, 2, 3, 4]);
    // ... until the count reaches RECOVERY_MAX_ATTEMPTS: this start fails the run instead and stays up.
    const { server, died: gone } = await life(3 * (TTL_MS + HEARTBEAT_MS));
    expect(gone).toBe(false);
    const host = server!;
    const run = await openwopClient(host.baseUrl).waitForRun(taskId, (s) => s.status === "failed", 10_000);
    expect(run.error).toMatchObject({ code: "poison_exhausted", details: { nodeId: "crash" } });
    expect(run.error.message).toContain(`died ${MAX_ATTEMPTS} times`);
    const got = (await (
      await fetch(`${host.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: taskId } }),
      })
    ).json()) as { result: { status: { state: string }; metadata?: Record<string, any> } };
    expect(got.result.status.state).toBe("failed");
    expect(got.result.metadata?.["openwop"]?.["error"]).toMatchObject({ code: "poison_exhausted" });
    const metrics = await (await fetch(`${host.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/openwop_poison_exhausted_total\{[^}]*\} 1\b/);
    // This life saw the last charged death only (each life counts what it commits).
    expect(metrics).toMatch(/openwop_node_charged_crashes_total\{[^}]*\} 1\b/);
    // It took the lease its previous life never released: a takeover (OpenwopLeaseTakeoversSpiking counts these).
    expect(metrics).toMatch(/openwop_lease_takeovers_total\{[^}]*\} 1\b/);
    const log = await committedLog(taskId);
    expect(
      log.filter((e) => e.type === "node.interrupted").map((e) => [e.payload["charged"], e.payload["crashes"]]),
    ).toEqual([
      [false, 0],
      [true, 1],
      [true, 2],
      [true, 3],
    ]);
    expect(log.at(-1)?.type).toBe("run.failed");

    // Terminal: neither this instance nor a new one takes it again, and other tasks keep working.
    const peer = await start("poison-peer");
    const echo = await send(peer, { ...message("echo"), parts: [{ kind: "text", text: "still here" }] }, true);
    expect(echo.result?.status.state).toBe("completed");
    await new Promise((r) => setTimeout(r, 2 * (TTL_MS + HEARTBEAT_MS)));
    expect(host.child.exitCode).toBeNull();
    expect(peer.child.exitCode).toBeNull();
    expect(host.child.signalCode).toBeNull();
    expect(await invocations(taskId)).toHaveLength(MAX_ATTEMPTS + 1);
    expect(await committedLog(taskId)).toEqual(log);
  }, 120_000);
});
