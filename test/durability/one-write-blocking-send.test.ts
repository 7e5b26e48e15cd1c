import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startCommandHoldProxy, type CommandHoldProxy, type WriteCommand } from "../support/command-hold-proxy.js";
import "../support/mongo.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

interface StoredEvent {
  taskId: string;
  sequence: number;
  type: string;
}

type RpcAnswer = {
  result?: { id: string; status: { state: string }; artifacts?: Array<{ parts: Array<{ text?: string }> }> };
  error?: { code: number; message: string; data?: Record<string, unknown> };
};

/** The write that stores a task head: one client bulkWrite (MongoDB >= 8.0), else the insert into `tasks` after its events. */
const headWrite = (write: WriteCommand) =>
  write.name === "bulkWrite" || (write.name === "insert" && write.collection === "tasks");

/**
 * A blocking send whose task ends within BLOCKING_FIRST_WRITE_MS is stored in ONE write, with its
 * idempotency key, before the answer. The real server process, the real driver, and a TCP proxy between
 * them (test/support/command-hold-proxy.ts) that lets that write reach the database but keeps its reply
 * back, so the process is SIGKILLed exactly between the commit and the answer; or that refuses the database
 * exactly at that write. Either way the caller's retry with the same messageId ends with exactly one task.
 */
describe(`one write for a fast blocking send, cut short (${inject("mongoBackend")})`, () => {
  const mongoUri = inject("mongoUri");
  const dbName = `one_write_${randomUUID().slice(0, 8)}`;
  const env = { MONGODB_DB: dbName, PUSH_ENABLED: "false", STORE_TIMEOUT_MS: "3000" };
  let proxy: CommandHoldProxy;
  let mongo: MongoClient;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
    proxy = await startCommandHoldProxy(mongoUri);
  });
  afterAll(async () => {
    for (const s of servers) await s.kill();
    await proxy?.close();
    await mongo?.db(dbName).dropDatabase();
    await mongo?.close();
  });

  const start = async (uri: string) => {
    const server = await startServerProcess({ ...env, MONGODB_URI: uri });
    servers.push(server);
    return server;
  };
  const send = async (server: ServerProcess, messageId: string, text: string): Promise<RpcAnswer> => {
    const response = await fetch(`${server.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId,
            role: "user",
            parts: [{ kind: "text", text }],
            metadata: { skillId: "echo" },
          },
        },
      }),
    });
    return (await response.json()) as RpcAnswer;
  };
  const tasks = () => mongo.db(dbName).collection<{ _id: string; a2a: { state: string } }>("tasks");
  const logOf = (taskId: string) =>
    mongo.db(dbName).collection<StoredEvent>("task_events").find({ taskId }).sort({ sequence: 1 }).toArray();

  it("SIGKILL between the single commit and the answer: the retry answers the same completed task, nothing runs twice", async () => {
    const text = `kill ${randomUUID()}`;
    const server = await start(proxy.uri);
    const before = await tasks().countDocuments();
    const swallowed = proxy.swallowReply(headWrite);
    const messageId = randomUUID();
    const answer = send(server, messageId, text).catch((err: unknown) => err);
    await swallowed;
    await server.kill();
    expect(await answer, "the caller was never answered").toBeInstanceOf(Error);

    // The one write stands: the task, whole, completed, each transition once.
    const stored = await tasks().find().skip(before).toArray();
    expect(stored).toHaveLength(1);
    const taskId = stored[0]!._id;
    expect(stored[0]!.a2a.state).toBe("completed");
    const log = await logOf(taskId);
    expect(log.map((e) => e.type)).toEqual([
      "run.created",
      "run.started",
      "node.started",
      "node.completed",
      "artifact.created",
      "run.completed",
    ]);

    // The caller retries the same message on a new process: the stored task, not a second run.
    const again = await start(mongoUri);
    const retried = await send(again, messageId, text);
    expect(retried.error).toBeUndefined();
    expect(retried.result?.id).toBe(taskId);
    expect(retried.result?.status.state).toBe("completed");
    expect(retried.result?.artifacts?.[0]?.parts[0]?.text).toBe(text);
    expect(await tasks().countDocuments()).toBe(before + 1);
    expect((await logOf(taskId)).map((e) => e.sequence)).toEqual(log.map((e) => e.sequence));
    await again.kill();
  });

  it("the store refuses the single write: a retryable answer, no trace of the task, and the retry makes exactly one", async () => {
    const text = `refused ${randomUUID()}`;
    const server = await start(proxy.uri);
    const before = await tasks().countDocuments();
    const eventsBefore = await mongo.db(dbName).collection("task_events").countDocuments();
    const refused = proxy.refuseAt(headWrite);
    const messageId = randomUUID();
    const answer = await send(server, messageId, text);
    await refused;
    expect(answer.error?.code).toBe(-32603);
    expect(answer.error?.data?.["retryable"]).toBe(true);
    expect(answer.error?.message).not.toContain(text);
    expect(await tasks().countDocuments(), "no task head").toBe(before);
    expect(await mongo.db(dbName).collection("task_events").countDocuments(), "no orphan events").toBe(eventsBefore);

    proxy.accept();
    const retried = await send(server, messageId, text);
    expect(retried.error).toBeUndefined();
    expect(retried.result?.status.state).toBe("completed");
    expect(await tasks().countDocuments()).toBe(before + 1);
    expect((await logOf(retried.result!.id)).map((e) => e.type)).toEqual([
      "run.created",
      "run.started",
      "node.started",
      "node.completed",
      "artifact.created",
      "run.completed",
    ]);
    await server.kill();
  });
});
