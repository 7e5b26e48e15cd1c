// Tenant limits across two instances on one MongoDB: the running-task cap is exact (the store counts the tenant's
// unfinished tasks and the places creators hold), also when creations race on both instances; the streams limit
// counts the other instance's streams as of its last beat, and the instances see each other to share the rates.
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TERMINAL_RUN_STATUSES } from "../../src/domain/run-status.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import "../support/mongo.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
const KEY = "acme-key-0123456789abcdef0123";
const CAP = 3;

describe("tenant limits across two instances of one store", () => {
  const dbName = `limits_${randomUUID().slice(0, 8)}`;
  const clients: MongoClient[] = [];
  let a: TestApp;
  let b: TestApp;
  async function host(instanceId: string): Promise<TestApp> {
    const client = await MongoClient.connect(inject("mongoUri"));
    clients.push(client);
    const store = new MongoTaskStore(client, client.db(dbName));
    await store.init();
    return startTestApp(
      {
        INSTANCE_ID: instanceId,
        LEASE_HEARTBEAT_MS: "100",
        LEASE_TTL_MS: "1000",
        API_KEYS: JSON.stringify([
          { id: "acme", tenant: "acme", scopes: ["runs:create", "runs:read", "runs:cancel"], key: KEY },
        ]),
        TENANT_LIMITS: JSON.stringify({ tenants: { acme: { runningTasks: CAP, streams: 1 } } }),
      },
      store,
    );
  }
  beforeAll(async () => {
    a = await host("limits-a");
    b = await host("limits-b");
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await clients[0]?.db(dbName).dropDatabase();
    await Promise.all(clients.map((c) => c.close()));
  });

  const send = async (t: TestApp): Promise<{ status: number; body: Obj }> => {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text: "hold on" }],
            metadata: { skillId: "approval-gate" },
          },
          configuration: { blocking: false },
        },
      }),
    });
    return { status: res.status, body: (await res.json()) as Obj };
  };
  const unfinished = () =>
    clients[0]!
      .db(dbName)
      .collection("tasks")
      .countDocuments({ tenant: "acme", status: { $nin: [...TERMINAL_RUN_STATUSES] } });

  it("creations racing on both instances never pass the cap, and the cap is reached exactly", async () => {
    // Twelve at once, six through each instance.
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => send(i % 2 === 0 ? a : b)));
    const accepted = answers.filter((r) => r.status === 200 && r.body["result"]).length;
    const refused = answers.filter((r) => r.status === 429);
    expect(accepted + refused.length).toBe(12);
    expect(accepted).toBeGreaterThanOrEqual(1);
    expect(accepted).toBeLessThanOrEqual(CAP);
    expect(await unfinished()).toBe(accepted);
    for (const r of refused) expect(r.body["error"]["data"]).toMatchObject({ limit: "runningTasks", allowed: CAP });
    // Two creators may both be refused for the last place (neither passes it): one at a time fills it exactly.
    for (let i = 0; i < CAP * 4 && (await unfinished()) < CAP; i++) await send(i % 2 === 0 ? b : a);
    expect(await unfinished()).toBe(CAP);
    // At the cap, both instances refuse, whichever created the tasks.
    expect((await send(a)).status).toBe(429);
    expect((await send(b)).status).toBe(429);
    expect(await unfinished()).toBe(CAP);
    // No place is left held: every creator gave its place back.
    expect(await clients[0]!.db(dbName).collection("running_task_holds").countDocuments()).toBe(0);
  });

  it("the instances see each other, and a stream open on one counts on the other", async () => {
    await until(() => a.app.limits.liveInstances === 2 && b.app.limits.liveInstances === 2);
    const created = await send(a);
    const taskId = (created.body["result"]?.["id"] ?? (await firstUnfinished())) as string;
    const abort = new AbortController();
    const first = await fetch(`${a.baseUrl}/v1/runs/${taskId}/events`, {
      headers: { authorization: `Bearer ${KEY}` },
      signal: abort.signal,
    });
    expect(first.status).toBe(200);
    // B hears of A's stream at A's next beat; from then on B refuses a second one.
    let second = await fetch(`${b.baseUrl}/v1/runs/${taskId}/events`, { headers: { authorization: `Bearer ${KEY}` } });
    for (let i = 0; i < 100 && second.status === 200; i++) {
      await second.body?.cancel();
      await new Promise((r) => setTimeout(r, 50));
      second = await fetch(`${b.baseUrl}/v1/runs/${taskId}/events`, { headers: { authorization: `Bearer ${KEY}` } });
    }
    expect(second.status).toBe(429);
    expect(((await second.json()) as Obj)["details"]).toMatchObject({ limit: "streams", allowed: 1 });
    abort.abort();
  });

  async function firstUnfinished(): Promise<string> {
    const doc = await clients[0]!
      .db(dbName)
      .collection("tasks")
      .findOne({ tenant: "acme", status: { $nin: [...TERMINAL_RUN_STATUSES] } });
    return String(doc!["_id"]);
  }
});

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(check()).toBe(true);
}
