import { randomBytes, randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { PushReceiver, waitFor, type PushHit } from "../support/push-receiver.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

/**
 * The push outbox is the stored event log: a server killed (SIGKILL) after a transition committed but
 * before its push was confirmed delivers it after the restart, with the same X-A2A-Event-Id, in order.
 */
describe("push delivery survives SIGKILL", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `push_durability_${randomUUID().slice(0, 8)}`;
  const env = {
    MONGODB_URI: mongoUri,
    MONGODB_DB: dbName,
    NODE_ENV: "test",
    TIMER_POLL_MS: "100",
    PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
    PUSH_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    PUSH_SIGNING_KEY: randomBytes(24).toString("base64url"),
    PUSH_RETRY_BASE_MS: "50",
    PUSH_RETRY_MAX_MS: "200",
    PUSH_TIMEOUT_MS: "30000",
    // The restarted process is the same instance: it takes the dead one's delivery leases back at once.
    INSTANCE_ID: "push-restart",
  };
  let mongo: MongoClient;
  let server: ServerProcess | undefined;
  const receivers: PushReceiver[] = [];

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
  });
  afterEach(async () => {
    await server?.kill();
    server = undefined;
    for (const r of receivers.splice(0)) await r.stop();
  });
  afterAll(async () => {
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  const rpc = async (method: string, params: unknown) => {
    const res = await fetch(`${server!.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return (await res.json()) as { result?: any; error?: { code: number; message: string } };
  };
  const send = (push: Record<string, unknown>) =>
    rpc("message/send", {
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        parts: [{ kind: "text", text: "Send the report" }],
        metadata: { skillId: "approval-gate" },
      },
      configuration: { pushNotificationConfig: push },
    });
  const accept = (taskId: string) =>
    rpc("message/send", {
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        taskId,
        parts: [{ kind: "data", data: { action: "accept" } }],
      },
    });
  const cursorOf = async (taskId: string) =>
    ((await mongo.db(dbName).collection("pushConfigs").findOne({ taskId })) as { delivery?: { cursor: number } } | null)
      ?.delivery?.cursor;
  const eventIds = (hits: PushHit[]) => hits.map((h) => h.headers["x-a2a-event-id"]);

  it("killed while the webhook holds the push: after the restart it arrives again with the same event id, then the rest in order", async () => {
    const hook = await new PushReceiver().start();
    receivers.push(hook);
    let hold = true;
    hook.reply = (_hit, res) => {
      if (!hold) res.writeHead(204).end();
      // else: never answer, as if the host died before it heard back
    };
    server = await startServerProcess(env);
    const sent = await send({ url: hook.url("/hook"), token: "durable-token" });
    expect(sent.result?.status.state).toBe("input-required");
    const taskId = sent.result.id as string;
    const first = await waitFor(() => hook.forTask(taskId)[0], 15_000, "the first attempt");
    expect(first.json["status"].state).toBe("input-required");
    const cursorBefore = await cursorOf(taskId);

    const port = server.port;
    await server.kill();
    hold = false;
    server = await startServerProcess(env, port);

    const again = await waitFor(() => hook.forTask(taskId)[1], 15_000, "the push after the restart");
    expect(again.headers["x-a2a-event-id"]).toBe(first.headers["x-a2a-event-id"]);
    expect(again.body).toBe(first.body);
    expect(again.headers["x-a2a-notification-token"]).toBe("durable-token");
    await waitFor(async () => ((await cursorOf(taskId)) ?? -1) > (cursorBefore ?? -1), 10_000, "the cursor to move");

    expect((await accept(taskId)).result?.status.state).toBe("completed");
    const hits = await waitFor(
      () => (hook.forTask(taskId).length >= 3 ? hook.forTask(taskId) : undefined),
      15_000,
      "the completed push",
    );
    expect(hits.map((h) => h.json["status"].state)).toEqual(["input-required", "input-required", "completed"]);
    expect(new Set(eventIds(hits)).size).toBe(2);
    expect(server.output()).not.toContain("durable-token");
  });

  it("killed while retries are pending (the webhook is down): after the restart every push arrives, in order, once each", async () => {
    const hook = await new PushReceiver().start();
    receivers.push(hook);
    const port = hook.port;
    await hook.stop();
    server = await startServerProcess({ ...env, PUSH_TRANSITIONS: "all" });
    const sent = await send({ url: `http://127.0.0.1:${port}/hook` });
    const taskId = sent.result.id as string;
    expect((await accept(taskId)).result?.status.state).toBe("completed");
    await waitFor(
      async () =>
        (
          (await mongo.db(dbName).collection("pushConfigs").findOne({ taskId })) as {
            delivery?: { attempts: number };
          } | null
        )?.delivery?.attempts,
      10_000,
      "a recorded failed attempt",
    );

    const serverPort = server.port;
    await server.kill();
    await hook.start(port);
    server = await startServerProcess({ ...env, PUSH_TRANSITIONS: "all" }, serverPort);

    const hits = await waitFor(
      () =>
        hook.forTask(taskId).some((h) => h.json["status"].state === "completed") ? hook.forTask(taskId) : undefined,
      15_000,
      "every push",
    );
    expect(hits.map((h) => h.json["status"].state)).toEqual([
      "submitted",
      "working",
      "input-required",
      "working",
      "completed",
    ]);
    expect(new Set(eventIds(hits)).size).toBe(hits.length);
  });
});
