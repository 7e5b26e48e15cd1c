// Push delivery across host processes on one database (the wire-protocol test server): each push config's
// delivery is leased to one instance at a time. Tasks driven on instance A, configs registered through
// instance B: B hears A's commits through the change stream and delivers each state once. Then the
// instance holding a config's lease dies (SIGKILL) while a push is pending: the other instance takes the
// lease over after the TTL and continues from the stored cursor.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { PushReceiver, waitFor, type PushHit } from "../support/push-receiver.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

const TTL_MS = 1_500;
/** Two host processes start per test; on a loaded machine that alone takes a while. */
const TEST_TIMEOUT_MS = 90_000;
const HEARTBEAT_MS = 300;
/** Every status change of a task registered at its first gate, answered twice (PUSH_TRANSITIONS=all). */
const AFTER_FIRST_GATE = ["working", "input-required", "working", "completed"];

interface StoredConfig {
  taskId: string;
  delivery: { cursor: number; attempts: number; settled: boolean };
  lease?: { owner: string | null; epoch: number; expiresAt: Date | null };
}

describe("push delivery leases across host processes", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `push_leases_${randomUUID().slice(0, 8)}`;
  let mongo: MongoClient;
  let workflowsDir: string;
  const servers: ServerProcess[] = [];
  const receivers: PushReceiver[] = [];
  // Both instances must open each other's sealed secrets and sign alike: one set of keys.
  const keys = {
    PUSH_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    PUSH_SIGNING_KEY: randomBytes(24).toString("base64url"),
  };

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
    workflowsDir = await mkdtemp(join(tmpdir(), "push-leases-"));
    await writeFile(
      join(workflowsDir, "two-gates.yaml"),
      "id: two-gates\nname: Two gates\ndescription: two approvals in a row\nnodes:\n  - { kind: approval, id: first, title: First }\n  - { kind: approval, id: second, title: Second }\n",
    );
  });
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.kill();
    for (const r of receivers.splice(0)) await r.stop();
  });
  afterAll(async () => {
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  const start = async (instanceId: string, env: Record<string, string> = {}) => {
    const server = await startServerProcess({
      MONGODB_URI: mongoUri,
      MONGODB_DB: dbName,
      NODE_ENV: "test",
      WORKFLOWS_DIR: workflowsDir,
      TIMER_POLL_MS: "100",
      INSTANCE_ID: instanceId,
      LEASE_TTL_MS: String(TTL_MS),
      LEASE_HEARTBEAT_MS: String(HEARTBEAT_MS),
      ...keys,
      PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
      PUSH_TRANSITIONS: "all",
      PUSH_RETRY_BASE_MS: "100",
      PUSH_RETRY_MAX_MS: "300",
      PUSH_MAX_ATTEMPTS: "1000",
      // No sweep during the test: only wake-ups (commits, the change stream, expired leases) deliver.
      PUSH_SWEEP_INTERVAL_MS: "3600000",
      ...env,
    });
    servers.push(server);
    return server;
  };

  const rpc = async (server: ServerProcess, method: string, params: unknown) => {
    const res = await fetch(`${server.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const body = (await res.json()) as { result?: any; error?: { code: number; message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result;
  };
  const startTask = async (on: ServerProcess): Promise<string> => {
    const task = await rpc(on, "message/send", {
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        parts: [{ kind: "text", text: "go" }],
        metadata: { skillId: "two-gates" },
      },
    });
    expect(task.status.state).toBe("input-required");
    return task.id as string;
  };
  const accept = async (on: ServerProcess, taskId: string) =>
    (
      await rpc(on, "message/send", {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          taskId,
          parts: [{ kind: "data", data: { action: "accept" } }],
        },
      })
    ).status.state as string;
  const register = (on: ServerProcess, taskId: string, url: string) =>
    rpc(on, "tasks/pushNotificationConfig/set", { taskId, pushNotificationConfig: { url, token: `token-${taskId}` } });
  const storedConfig = async (taskId: string) =>
    (await mongo.db(dbName).collection("pushConfigs").findOne({ taskId })) as StoredConfig | null;
  const statesOf = (hits: PushHit[]) => hits.map((h) => h.json["status"].state as string);
  const eventIdsOf = (hits: PushHit[]) => hits.map((h) => h.headers["x-a2a-event-id"] as string);
  const completed = (hook: PushReceiver, taskId: string) => () =>
    statesOf(hook.forTask(taskId)).includes("completed") ? hook.forTask(taskId) : undefined;

  /** Every task's states arrive in order, one POST per event id (late duplicates would come within a few heartbeats). */
  async function expectEachStateOnce(hook: PushReceiver, taskIds: string[]): Promise<void> {
    for (const taskId of taskIds) await waitFor(completed(hook, taskId), 15_000, `the completed push of ${taskId}`);
    await new Promise((r) => setTimeout(r, 2 * TTL_MS));
    for (const taskId of taskIds) {
      const hits = hook.forTask(taskId);
      expect(statesOf(hits)).toEqual(AFTER_FIRST_GATE);
      expect(new Set(eventIdsOf(hits)).size).toBe(hits.length);
    }
  }

  it(
    "tasks driven on A, configs registered through B: B hears A's commits and every state arrives once, in order",
    async () => {
      const hook = await new PushReceiver().start();
      receivers.push(hook);
      const a = await start("push-a");
      const b = await start("push-b");

      const taskIds = [await startTask(a), await startTask(a), await startTask(a)];
      for (const taskId of taskIds) await register(b, taskId, hook.url("/hook"));
      for (const taskId of taskIds) expect(await accept(a, taskId)).toBe("input-required");
      for (const taskId of taskIds) expect(await accept(a, taskId)).toBe("completed");

      await expectEachStateOnce(hook, taskIds);
      for (const taskId of taskIds) {
        const hits = hook.forTask(taskId);
        expect(hits.every((h) => h.headers["x-a2a-notification-token"] === `token-${taskId}`)).toBe(true);
        // Delivered under a lease, given back when the config settled.
        const stored = await storedConfig(taskId);
        expect(stored?.delivery.settled).toBe(true);
        expect(stored?.lease?.owner ?? null).toBeNull();
        expect(stored?.lease?.epoch).toBeGreaterThanOrEqual(1);
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "both instances watch every config (frequent sweeps) and race on every commit: still one POST per event id",
    async () => {
      const hook = await new PushReceiver().start();
      receivers.push(hook);
      // Slow answers widen the window in which the other instance would POST the same event.
      hook.reply = (_hit, res) => void setTimeout(() => res.writeHead(200).end("ok"), 150);
      const racing = { PUSH_SWEEP_INTERVAL_MS: "100" };
      const a = await start("push-e", racing);
      const b = await start("push-f", racing);

      const taskIds = [await startTask(a), await startTask(b), await startTask(a)];
      for (const [i, taskId] of taskIds.entries()) await register(i % 2 === 0 ? b : a, taskId, hook.url("/hook"));
      // Both sweeps have seen every config: both instances watch every task from here on.
      await new Promise((r) => setTimeout(r, 500));
      for (const [i, taskId] of taskIds.entries())
        expect(await accept(i % 2 === 0 ? a : b, taskId)).toBe("input-required");
      for (const [i, taskId] of taskIds.entries()) expect(await accept(i % 2 === 0 ? b : a, taskId)).toBe("completed");

      await expectEachStateOnce(hook, taskIds);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "SIGKILL of the lease holder while a push is pending: the other instance takes the lease over after the TTL and continues from the stored cursor",
    async () => {
      const hook = await new PushReceiver().start();
      receivers.push(hook);
      const port = hook.port;
      await hook.stop();
      const a = await start("push-c");
      const b = await start("push-d");

      const taskId = await startTask(a);
      await register(b, taskId, `http://127.0.0.1:${port}/hook`);
      expect(await accept(a, taskId)).toBe("input-required");
      // B holds the lease and keeps retrying the first push (the receiver is down).
      const pending = await waitFor(
        async () => {
          const stored = await storedConfig(taskId);
          return stored && stored.delivery.attempts >= 2 && stored.lease?.owner === "push-d" ? stored : undefined;
        },
        15_000,
        "B retrying under its lease",
      );
      expect(pending.delivery.settled).toBe(false);
      // Any instance's console shows which instance delivers the config.
      const consoleView = (await (await fetch(`${a.baseUrl}/console/api/tasks/${taskId}/push`)).json()) as {
        configs: Array<{ lease?: { owner: string } }>;
      };
      expect(consoleView.configs[0]?.lease?.owner).toBe("push-d");

      await b.kill();
      await hook.start(port);
      expect(await accept(a, taskId)).toBe("completed");

      const hits = await waitFor(completed(hook, taskId), TTL_MS + 15_000, "every push after the takeover");
      // At least once, in order: a push B may have had in flight can come again, with the same event id.
      const firstOfEach = hits.filter((h, i) => eventIdsOf(hits).indexOf(eventIdsOf([h])[0]!) === i);
      expect(statesOf(firstOfEach)).toEqual(AFTER_FIRST_GATE);
      expect(eventIdsOf(hits)).toEqual(
        [...eventIdsOf(hits)].sort((x, y) => Number(x.split(":").at(-1)) - Number(y.split(":").at(-1))),
      );
      expect(a.output()).toContain("took over the delivery lease");
      // The worker settles the config in a pass after the last push's cursor is stored: the push arrives first.
      const stored = await waitFor(
        async () => {
          const config = await storedConfig(taskId);
          return config?.delivery.settled ? config : undefined;
        },
        5_000,
        "the delivery recorded as settled",
      );
      expect(stored.delivery.settled).toBe(true);
      expect(stored.lease?.epoch).toBeGreaterThanOrEqual(2);
    },
    TEST_TIMEOUT_MS,
  );
});
