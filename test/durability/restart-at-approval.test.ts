import { randomUUID } from "node:crypto";
import { LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

/**
 * The promise of a durable task: a stock A2A client sends a message, the task pauses at an approval gate,
 * the client goes away, the server is killed (SIGKILL) and restarted against the same MongoDB, and the
 * task is exactly where it was; the reply then completes it. One run, gap-free events.
 */
describe("a task survives SIGKILL at an approval gate", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `durability_${randomUUID().slice(0, 8)}`;
  let server: ServerProcess | undefined;
  let mongo: MongoClient;

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
  });
  afterAll(async () => {
    await server?.kill();
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  const client = (s: ServerProcess) => new LegacyJsonRpcTransport({ endpoint: `${s.baseUrl}/a2a/jsonrpc` });
  const userText = (text: string) => ({
    content: { $case: "text" as const, value: text },
    metadata: undefined,
    filename: "",
    mediaType: "",
  });
  const userData = (value: Record<string, unknown>) => ({
    content: { $case: "data" as const, value },
    metadata: undefined,
    filename: "",
    mediaType: "",
  });

  it("pauses, survives the crash, and completes on reply", async () => {
    const env = { MONGODB_URI: mongoUri, MONGODB_DB: dbName, TIMER_POLL_MS: "100" };
    server = await startServerProcess(env);
    const first = await client(server).sendMessage({
      tenant: "",
      message: {
        messageId: randomUUID(),
        contextId: "",
        taskId: "",
        role: 1,
        parts: [userText("Send the quarterly report")],
        metadata: { skillId: "approval-gate" },
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    });
    if (!("status" in first)) throw new Error(`expected a task, got ${JSON.stringify(first)}`);
    const task = first;
    expect(task.status?.state).toBe(6); // TASK_STATE_INPUT_REQUIRED
    expect((task.metadata as { openwop: { interrupt: { kind: string } } }).openwop.interrupt.kind).toBe("approval");

    const port = server.port;
    await server.kill();
    server = await startServerProcess(env, port);

    const again = await client(server).getTask({ tenant: "", id: task.id, historyLength: undefined });
    expect(again.id).toBe(task.id);
    expect(again.status?.state).toBe(6);
    expect(
      (again.metadata as { openwop: { interrupt: { kind: string; interruptId: string } } }).openwop.interrupt,
    ).toEqual((task.metadata as { openwop: { interrupt: unknown } }).openwop.interrupt);

    const done = await client(server).sendMessage({
      tenant: "",
      message: {
        messageId: randomUUID(),
        contextId: task.contextId,
        taskId: task.id,
        role: 1,
        parts: [userData({ action: "accept" })],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    });
    const finished = "status" in done ? done : undefined;
    expect(finished?.id).toBe(task.id);
    expect(finished?.status?.state).toBe(3); // TASK_STATE_COMPLETED
    expect(finished?.artifacts.map((a) => a.name)).toEqual(["proposal", "result"]);

    // The log lives in task_events, one document per event.
    const events = await mongo
      .db(dbName)
      .collection<{ taskId: string; sequence: number; type: string }>("task_events")
      .find({ taskId: task.id })
      .sort({ sequence: 1 })
      .toArray();
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === "run.started")).toHaveLength(1);
    expect(events.filter((e) => e.type === "run.completed")).toHaveLength(1);
    expect(events.at(-1)?.type).toBe("run.completed");
  });
});
