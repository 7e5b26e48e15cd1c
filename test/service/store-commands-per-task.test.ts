import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import "../support/mongo.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

/**
 * Store commands per task, counted by driver command monitoring (deterministic at concurrency 1): what one
 * echo task and one approval-gate task (up to its wait) cost the MongoDB task store, end to end through the
 * service. The figures depend on how many commits the engine makes per task; the store's share is two
 * commands per commit (events insert, head write) and one more when a task ends (its log's expiry stamp).
 */
describe(`store commands per task (${inject("mongoBackend")})`, () => {
  const dbName = `commands_${randomUUID().slice(0, 8)}`;
  const commands: string[] = [];
  let client: MongoClient;
  let t: TestApp;

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"), { monitorCommands: true });
    client.on("commandStarted", (e) => {
      const target = e.command[e.commandName];
      // The durable-timer poll (dueTimers) runs on its own clock, not per task: left out.
      const timerPoll = e.commandName === "find" && "timerDueAt" in ((e.command["filter"] as object | undefined) ?? {});
      if ((target === "tasks" || target === "task_events") && !timerPoll) commands.push(`${e.commandName}:${target}`);
    });
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    t = await startTestApp({}, store);
  });
  afterAll(async () => {
    await t.close();
    await client.db(dbName).dropDatabase();
    await client.close();
  });

  const send = async (skillId: string) => {
    commands.length = 0;
    const response = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "go" }], metadata: { skillId } } } }),
    });
    const body = (await response.json()) as { result: { status: { state: string } } };
    // Let any write the response did not wait for land before counting.
    await new Promise((r) => setTimeout(r, 100));
    return { state: body.result.status.state, commands: [...commands] };
  };

  it("echo task: no lookup before the create; two commands per commit and one expiry stamp", async () => {
    const echo = await send("echo");
    expect(echo.state).toBe("completed");
    const approval = await send("approval-gate");
    expect(approval.state).toBe("input-required");
    console.log(`store commands per echo task: ${echo.commands.length} (${echo.commands.join(", ")})`);
    console.log(`store commands per approval-gate task up to the wait: ${approval.commands.length} (${approval.commands.join(", ")})`);
    expect(echo.commands).not.toContain("find:tasks");
    const commits = (list: string[]) => list.filter((c) => c === "update:tasks").length + list.filter((c) => c === "insert:tasks").length;
    expect(echo.commands.filter((c) => c === "insert:task_events")).toHaveLength(commits(echo.commands));
    expect(echo.commands.filter((c) => c === "update:task_events")).toHaveLength(1);
    expect(echo.commands).toHaveLength(2 * commits(echo.commands) + 1);
    expect(approval.commands).toHaveLength(2 * commits(approval.commands));
  });
});
