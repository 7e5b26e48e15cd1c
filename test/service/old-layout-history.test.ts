// A task stored by the previous layout (machine version 1: the whole A2A history in the head's snapshot, log
// events without messages) is restored by this host, read with its whole history, and continues.
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import type { Message } from "../../src/domain/a2a-types.js";
import { RECENT_HISTORY } from "../../src/machine/task-machine.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import "../support/mongo.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

const ctx: CallContext = { principal: { tenant: "default", id: "alice", scopes: "*" } };
const env = { PUSH_ENABLED: "false", BLOCKING_TIMEOUT_MS: "10000" };

describe(`a task stored by the previous layout (mongodb: ${inject("mongoBackend")})`, () => {
  const dbName = `old_layout_${randomUUID().slice(0, 8)}`;
  let client: MongoClient;
  let t: TestCore | undefined;
  const open = async () => {
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    return startTestCore(env, { store });
  };

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"));
  });
  afterAll(async () => {
    await t?.core.stop();
    await client.db(dbName).dropDatabase();
    await client.close();
  });

  it("is restored, reads with its whole history, and continues: new messages go to the log", async () => {
    t = await open();
    const first: Message = {
      messageId: randomUUID(),
      role: "user",
      parts: [{ kind: "text", text: "ship it" }],
      metadata: { skillId: "approval-gate" },
    };
    const task = await t.core.service.sendMessage({ message: first, blocking: true }, ctx);
    expect(task.status.state).toBe("input-required");
    await t.core.stop();
    t = undefined;

    // Rewrite it as version 1 stored it: an unversioned snapshot holding a long history, and a log without messages.
    const tasks = client.db(dbName).collection<Record<string, unknown>>("tasks");
    const head = (await tasks.findOne({ _id: task.id as never }))!;
    const { machineVersion: _v, ...snapshot } = head["snapshot"] as {
      machineVersion?: number;
      context: Record<string, unknown>;
    };
    const {
      request: _r,
      historyCount: _c,
      history,
      ...context
    } = snapshot.context as { request: Message; historyCount: number; history: Message[] };
    const earlier: Message[] = Array.from({ length: RECENT_HISTORY + 3 }, (_, i) => ({
      messageId: `old-${i}`,
      role: i % 2 === 0 ? "user" : "agent",
      parts: [{ kind: "text", text: `old ${i}` }],
      taskId: task.id,
    }));
    const oldHistory = [history[0]!, ...earlier, ...history.slice(1)];
    await tasks.updateOne(
      { _id: task.id as never },
      { $set: { snapshot: { ...snapshot, context: { ...context, history: oldHistory } } } },
    );
    await client
      .db(dbName)
      .collection("task_events")
      .updateMany({ taskId: task.id }, { $unset: { history: "", historyEnd: "" } });

    t = await open();
    const read = await t.core.service.getTask(task.id, undefined, ctx);
    expect(read.history).toEqual(oldHistory);
    expect((await t.core.service.getTask(task.id, 2, ctx)).history).toEqual(oldHistory.slice(-2));
    // A retry of a message only the old head holds is recognised.
    const retry = {
      messageId: "old-0",
      role: "user" as const,
      parts: [{ kind: "text" as const, text: "old 0" }],
      taskId: task.id,
      contextId: task.contextId,
    };
    const version = (await t.core.reads.get(task.id, "default")).version;
    await t.core.service.sendMessage({ message: retry, blocking: true }, ctx);
    expect((await t.core.reads.get(task.id, "default")).version).toBe(version);

    const reply: Message = {
      messageId: randomUUID(),
      role: "user",
      parts: [{ kind: "data", data: { action: "accept" } }],
      taskId: task.id,
      contextId: task.contextId,
    };
    const done = await t.core.service.sendMessage({ message: reply, blocking: true }, ctx);
    expect(done.status.state).toBe("completed");
    expect(done.history.slice(0, oldHistory.length)).toEqual(oldHistory);
    expect(done.history[oldHistory.length]!.messageId).toBe(reply.messageId);
    const stored = (await tasks.findOne({ _id: task.id as never }))!["snapshot"] as {
      machineVersion: number;
      context: { historyCount: number };
    };
    expect(stored.machineVersion).toBe(2);
    expect(stored.context.historyCount).toBe(done.history.length);
    expect((await t.core.service.getTask(task.id, undefined, ctx)).history).toEqual(done.history);
  });
});
