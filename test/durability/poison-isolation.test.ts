// Issue 42 item 4, the done-when repro: 3 poison tasks (a handler that SIGKILLs its own process) and 9 innocent
// tasks (3 s of work each) on 3 host processes on one database. Each process that dies is started again with its
// INSTANCE_ID, as an orchestrator would. Before, every instance death was charged to every node running on it, so
// innocent tasks ended `poison_exhausted`. Now a node that died while not run alone is a suspect and runs again alone
// on its instance; only a death while it ran alone is charged. Afterwards: every innocent task completed with no
// charged death, and every poison task failed `poison_exhausted` after exactly RECOVERY_MAX_ATTEMPTS charged deaths
// and at most RECOVERY_MAX_ATTEMPTS + 1 executions (the bound docs/operating.md "Poison work" states).
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

const INSTANCES = 3;
const POISON = 3;
const INNOCENT = 9;
const MAX_ATTEMPTS = 2;
const TTL_MS = 3_000;
const HEARTBEAT_MS = 500;
const EFFECTS = "isolation_effects";
const FIXTURES = join(import.meta.dirname, "..", "fixtures");

interface StoredEvent {
  type: string;
  sequence: number;
  payload: Record<string, unknown>;
}

describe("poison charged to the guilty: 3 poison and 9 innocent tasks on 3 processes with real SIGKILLs", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `isolation_${randomUUID().slice(0, 8)}`;
  let mongo: MongoClient;
  /** The live process of each slot (undefined while it is being started again). */
  const slots: Array<ServerProcess | undefined> = [];
  let stopping = false;
  let restarts = 0;
  const lives: Array<Promise<void>> = [];

  const env = (instanceId: string) => ({
    MONGODB_URI: mongoUri,
    MONGODB_DB: dbName,
    WORKFLOWS_DIR: join(FIXTURES, "durability-workflows"),
    BUILTIN_WORKFLOWS: "demo",
    HANDLERS_MODULE: join(FIXTURES, "durability-handlers.ts"),
    EFFECTS_COLLECTION: EFFECTS,
    TIMER_POLL_MS: "200",
    INSTANCE_ID: instanceId,
    LEASE_TTL_MS: String(TTL_MS),
    LEASE_HEARTBEAT_MS: String(HEARTBEAT_MS),
    RECOVERY_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
  });

  /** Keeps slot `i` running: whenever its process dies (its poison node SIGKILLs it), it is started again. */
  async function keepAlive(i: number): Promise<void> {
    while (!stopping) {
      let server: ServerProcess;
      try {
        server = await startServerProcess(env(`iso-${i}`));
      } catch (err) {
        if (stopping || /exited with/.test(String(err))) {
          restarts++;
          continue; // died during start-up (it took its poison task back at once)
        }
        throw err;
      }
      // Asked to stop while this process started: afterAll has killed only the processes it saw, so this one goes now.
      if (stopping) {
        await server.kill();
        return;
      }
      slots[i] = server;
      await new Promise<void>((resolve) =>
        server.child.exitCode !== null || server.child.signalCode !== null
          ? resolve()
          : server.child.once("exit", () => resolve()),
      );
      slots[i] = undefined;
      if (!stopping) restarts++;
    }
  }

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
  });
  afterAll(async () => {
    stopping = true;
    for (const s of slots) if (s && s.child.exitCode === null && s.child.signalCode === null) await s.kill();
    await Promise.allSettled(lives);
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  /** Sends through slot `i`, else another live slot; the same messageId makes a resend the same task. */
  async function send(skillId: string, first: number): Promise<string> {
    const contextId = randomUUID();
    const messageId = randomUUID();
    const deadline = Date.now() + 60_000;
    for (let k = first; ; k++) {
      const server = slots[k % INSTANCES];
      if (server) {
        const answer = await fetch(`${server.baseUrl}/a2a/jsonrpc`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "message/send",
            params: {
              message: {
                kind: "message",
                role: "user",
                messageId,
                contextId,
                parts: [{ kind: "text", text: "go" }],
                metadata: { skillId },
              },
              configuration: { blocking: false },
            },
          }),
        })
          .then((r) => r.json() as Promise<{ result?: { id: string } }>)
          .catch(() => undefined);
        if (answer?.result?.id) return answer.result.id;
      }
      if (Date.now() > deadline) throw new Error(`could not send a ${skillId} task`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const head = (taskId: string) =>
    mongo
      .db(dbName)
      .collection<{ _id: string; a2a: { state: string } }>("tasks")
      .findOne({ _id: taskId as never });
  async function committedLog(taskId: string): Promise<StoredEvent[]> {
    const version = (
      await mongo
        .db(dbName)
        .collection<{ version: number }>("tasks")
        .findOne({ _id: taskId as never })
    )?.version;
    const docs = await mongo
      .db(dbName)
      .collection<StoredEvent & { taskId: string }>("task_events")
      .find({ taskId })
      .sort({ sequence: 1 })
      .toArray();
    return docs.filter((d) => d.sequence <= (version ?? -1));
  }
  const executions = (taskId: string) => mongo.db(dbName).collection(EFFECTS).countDocuments({ taskId });

  it("ends with 0 innocent tasks failed and every poison task failed within its bound", async () => {
    for (let i = 0; i < INSTANCES; i++) lives.push(keepAlive(i));
    const deadline = Date.now() + 60_000;
    while (slots.filter(Boolean).length < INSTANCES) {
      if (Date.now() > deadline) throw new Error("the three instances did not start");
      await new Promise((r) => setTimeout(r, 50));
    }
    // Innocent tasks first on every instance, so each poison task dies beside innocent work.
    const innocent: string[] = [];
    for (let i = 0; i < INNOCENT; i++) innocent.push(await send("effect", i));
    const poison: string[] = [];
    for (let i = 0; i < POISON; i++) poison.push(await send("poison", i));

    const all = [...innocent, ...poison];
    const settleBy = Date.now() + 150_000;
    for (;;) {
      const states = await Promise.all(all.map(async (id) => (await head(id))?.a2a.state));
      if (states.every((s) => s === "completed" || s === "failed")) break;
      if (Date.now() > settleBy) throw new Error(`tasks did not settle: ${JSON.stringify(states)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    stopping = true;

    let diedBesidePoison = 0;
    for (const taskId of innocent) {
      expect((await head(taskId))?.a2a.state, `innocent task ${taskId}`).toBe("completed");
      const log = await committedLog(taskId);
      if (log.some((e) => e.type === "node.interrupted")) diedBesidePoison++;
      expect(log.filter((e) => e.type === "node.interrupted" && e.payload["charged"] === true)).toEqual([]);
      // At most the one uncharged death, then it ran alone and completed.
      expect(log.filter((e) => e.type === "node.interrupted").length).toBeLessThanOrEqual(1);
    }
    // The repro's point: innocent work was running when a poison node killed its process.
    expect(diedBesidePoison).toBeGreaterThan(0);
    for (const taskId of poison) {
      expect((await head(taskId))?.a2a.state, `poison task ${taskId}`).toBe("failed");
      const log = await committedLog(taskId);
      expect(log.at(-1)?.payload["error"]).toMatchObject({ code: "poison_exhausted" });
      const deaths = log.filter((e) => e.type === "node.interrupted").map((e) => e.payload);
      expect(deaths.filter((p) => p["charged"] === true)).toHaveLength(MAX_ATTEMPTS);
      expect(deaths.length).toBeLessThanOrEqual(MAX_ATTEMPTS + 1);
      expect(await executions(taskId)).toBeLessThanOrEqual(MAX_ATTEMPTS + 1);
    }
    // Every poison execution killed its process: at least MAX_ATTEMPTS + 1 deaths per poison task, less any
    // execution that had not yet been recorded. The processes really died and came back.
    expect(restarts).toBeGreaterThanOrEqual(POISON * MAX_ATTEMPTS);
    console.info(
      `poison isolation: ${restarts} SIGKILLed processes restarted; ${diedBesidePoison} innocent tasks died beside poison`,
    );
  }, 240_000);
});
