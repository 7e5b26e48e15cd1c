import { randomUUID } from "node:crypto";
import { MongoClient, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import "../support/mongo.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

/** The collections a bulkWrite command writes (its nsInfo, a document sequence as the driver sends it). */
function bulkWriteTargets(command: Document): string[] {
  const nsInfo = command["nsInfo"] as Document[] | { documents: Document[] };
  return (Array.isArray(nsInfo) ? nsInfo : nsInfo.documents).map((n) => String(n["ns"]).split(".").slice(1).join("."));
}

/** Counts the writes (creates and commits) the engine asks of the store. */
class CountingStore extends MongoTaskStore {
  writes = 0;
  override create(...args: Parameters<MongoTaskStore["create"]>): Promise<void> {
    this.writes++;
    return super.create(...args);
  }
  override commit(...args: Parameters<MongoTaskStore["commit"]>): Promise<void> {
    this.writes++;
    return super.commit(...args);
  }
}

/**
 * Store commands per task, counted by driver command monitoring (deterministic at concurrency 1): what one
 * echo task and one approval-gate task (up to its wait) cost the MongoDB task store, end to end through the
 * service. The figures depend on how many writes the engine makes per task: a blocking send's echo task,
 * and an approval task up to its wait, are one write each (the create holds the whole run). The store's
 * share: on MongoDB >= 8.0 one command per write (a client bulkWrite: events, head, and the log's expiry
 * stamp when a commit ends the task); on older servers two per write (events insert, head write), and one
 * more when a commit (not a create: its events carry their expiry) ends the task.
 */
for (const oneCommandWrites of [true, false]) {
  describe(`store commands per task, ${oneCommandWrites ? "one command per commit (MongoDB >= 8.0)" : "two commands per commit (older servers)"} (${inject("mongoBackend")})`, () => {
    const dbName = `commands_${randomUUID().slice(0, 8)}`;
    const commands: string[] = [];
    let client: MongoClient;
    let t: TestApp;
    let store: CountingStore;

    beforeAll(async () => {
      client = await MongoClient.connect(inject("mongoUri"), { monitorCommands: true });
      client.on("commandStarted", (e) => {
        if (e.commandName === "bulkWrite") {
          commands.push(`bulkWrite:${bulkWriteTargets(e.command).join(",")}`);
          return;
        }
        const target = e.command[e.commandName];
        // The durable-timer poll (dueTimers) runs on its own clock, not per task: left out.
        const timerPoll =
          e.commandName === "find" && "timerDueAt" in ((e.command["filter"] as object | undefined) ?? {});
        if ((target === "tasks" || target === "task_events") && !timerPoll) commands.push(`${e.commandName}:${target}`);
      });
      store = new CountingStore(client, client.db(dbName), { oneCommandWrites });
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
      store.writes = 0;
      const response = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
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
              parts: [{ kind: "text", text: "go" }],
              metadata: { skillId },
            },
          },
        }),
      });
      const body = (await response.json()) as { result: { status: { state: string } } };
      // Let any write the response did not wait for land before counting.
      await new Promise((r) => setTimeout(r, 100));
      return { state: body.result.status.state, commands: [...commands], writes: store.writes };
    };

    it(
      oneCommandWrites
        ? "echo and approval tasks: no lookup before the create; one write, one command"
        : "echo and approval tasks: no lookup before the create; one write, two commands",
      async () => {
        const echo = await send("echo");
        expect(echo.state).toBe("completed");
        const approval = await send("approval-gate");
        expect(approval.state).toBe("input-required");
        const path = oneCommandWrites ? "one-command path" : "two-command path";
        console.log(`store commands per echo task (${path}): ${echo.commands.length} (${echo.commands.join(", ")})`);
        console.log(
          `store commands per approval-gate task up to the wait (${path}): ${approval.commands.length} (${approval.commands.join(", ")})`,
        );
        expect(echo.commands).not.toContain("find:tasks");
        expect(approval.commands).not.toContain("find:tasks");
        expect([echo.writes, approval.writes]).toEqual([1, 1]);
        // The create's events are inserted with the ended task's expiry: no stamp after.
        for (const task of [echo, approval])
          expect(task.commands).toEqual(
            oneCommandWrites ? ["bulkWrite:task_events,tasks"] : ["insert:task_events", "insert:tasks"],
          );
      },
    );
  });
}
