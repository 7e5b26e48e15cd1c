import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

interface StoredEvent {
  taskId: string;
  sequence: number;
  type: string;
}

/**
 * The MongoDB store writes a commit's events into task_events before the task head moves with its version
 * check: two commands on servers before 8.0, one ordered client bulkWrite on 8.0 — which is still not atomic
 * (mongod can stop part-way, the driver splits a batch over 48 MB into several commands). Here the real
 * server process is SIGKILLed exactly between the two (the store's test-only fault seam writes only the
 * events of the reply's commit — a bulkWrite of just its events on the one-command path — then kills its
 * own process). After a restart nothing
 * is lost, duplicated or half-visible: the task still waits at its gate, the orphan events are invisible to
 * every reader, the next commit replaces them, and the log is gap-free with each transition once.
 */
describe("SIGKILL between the events write and the head write", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `durability_split_${randomUUID().slice(0, 8)}`;
  const env = { MONGODB_URI: mongoUri, MONGODB_DB: dbName, TIMER_POLL_MS: "100" };
  let server: ServerProcess | undefined;
  let mongo!: MongoClient;

  const rpc = async (s: ServerProcess, method: string, params: unknown) => {
    const response = await fetch(`${s.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return (await response.json()) as {
      result?: { id: string; contextId: string; status: { state: string } };
      error?: { code: number; message: string };
    };
  };
  const send = (s: ServerProcess, message: Record<string, unknown>) =>
    rpc(s, "message/send", { message: { kind: "message", messageId: randomUUID(), role: "user", ...message } });
  const stored = () => mongo.db(dbName).collection<StoredEvent>("task_events");
  const head = (taskId: string) =>
    mongo.db(dbName).collection<{ _id: string; version: number }>("tasks").findOne({ _id: taskId });

  it("loses, duplicates and shows nothing of the interrupted commit", async () => {
    mongo = await MongoClient.connect(mongoUri);
    try {
      await interruptedCommit();
    } finally {
      await server?.kill();
      await mongo.db(dbName).dropDatabase();
      await mongo.close();
    }
  });

  async function interruptedCommit(): Promise<void> {
    server = await startServerProcess(env);
    const created = await send(server, {
      parts: [{ kind: "text", text: "Send the report" }],
      metadata: { skillId: "approval-gate" },
    });
    const task = created.result!;
    expect(task.status.state).toBe("input-required");
    const port = server.port;
    const waiting = (await head(task.id))!.version;
    const before = await stored().find({ taskId: task.id }).sort({ sequence: 1 }).toArray();
    expect(before.map((e) => e.sequence)).toEqual(before.map((_, i) => i));
    await server.kill();

    // The reply's commit dies after its events are stored and before the head moves.
    server = await startServerProcess({ ...env, OPENWOP_TEST_KILL_AFTER_EVENTS_WRITE: "interrupt.resolved" }, port);
    const reply = { taskId: task.id, contextId: task.contextId, parts: [{ kind: "data", data: { action: "accept" } }] };
    await send(server, reply).catch(() => undefined); // the connection drops with the process
    await new Promise<void>((resolve) =>
      server!.child.exitCode !== null || server!.child.signalCode !== null
        ? resolve()
        : server!.child.once("exit", () => resolve()),
    );
    expect(server.child.signalCode).toBe("SIGKILL");

    const orphans = await stored()
      .find({ taskId: task.id, sequence: { $gt: waiting } })
      .toArray();
    expect(orphans.length, "the events of the interrupted commit are in task_events").toBeGreaterThan(0);
    expect(orphans.map((e) => e.type)).toContain("interrupt.resolved");
    expect((await head(task.id))!.version, "the head did not move").toBe(waiting);

    server = await startServerProcess(env, port);
    // Not half-visible: the task still waits at its gate, and no reader sees the orphans.
    const again = await rpc(server, "tasks/get", { id: task.id });
    expect(again.result?.status.state).toBe("input-required");
    const polled = await fetch(`${server.baseUrl}/v1/runs/${task.id}/events/poll?timeoutMs=0&limit=1000`);
    expect(polled.status).toBe(200);
    const { events } = (await polled.json()) as { events: StoredEvent[] };
    expect(events.map((e) => e.sequence)).toEqual(before.map((e) => e.sequence));

    // The same reply again: it commits, replacing the orphans.
    const done = await send(server, reply);
    expect(done.result?.status.state).toBe("completed");
    const log = await stored().find({ taskId: task.id }).sort({ sequence: 1 }).toArray();
    const final = (await head(task.id))!.version;
    expect(
      log.map((e) => e.sequence),
      "gap-free, each sequence once",
    ).toEqual(Array.from({ length: final + 1 }, (_, i) => i));
    expect(log.slice(0, before.length).map((e) => e.type)).toEqual(before.map((e) => e.type));
    for (const type of ["run.created", "run.started", "interrupt.resolved", "run.completed"]) {
      expect(
        log.filter((e) => e.type === type),
        type,
      ).toHaveLength(1);
    }
    expect(log.at(-1)?.type).toBe("run.completed");
  }
});
