// The console's tenant limits: each tenant the caller may see, its limits, its usage on this instance and its
// refusals by reason (GET /console/api/limits, shown at /console/limits).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
const OPS = "ops-key-0123456789abcdef0123";
const ACME = "acme-key-0123456789abcdef0123";
const GLOBEX = "globex-key-0123456789abcdef0123";

describe("the console's tenant limits", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      CONSOLE_ENABLED: "true",
      API_KEYS: JSON.stringify([
        { id: "ops", tenant: "acme", scopes: ["console:operate", "console:all-tenants"], key: OPS },
        { id: "acme", tenant: "acme", scopes: ["runs:create", "runs:read", "console:operate"], key: ACME },
        { id: "globex", tenant: "globex", scopes: ["runs:create", "runs:read"], key: GLOBEX },
      ]),
      TENANT_LIMITS: JSON.stringify({
        default: { runningTasks: 5 },
        tenants: { globex: { runningTasks: 0, requestsPerSecond: 100 } },
      }),
    });
  });
  afterAll(() => t.close());

  const send = (key: string) =>
    fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text: "hi" }],
            metadata: { skillId: "approval-gate" },
          },
        },
      }),
    });
  const limitsAs = async (key: string) => {
    const res = await fetch(`${t.baseUrl}/console/api/limits`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as Obj };
  };

  it("shows each tenant's limits, usage against them and refusals by reason", async () => {
    expect((await send(ACME)).status).toBe(200);
    expect((await send(ACME)).status).toBe(200);
    expect((await send(GLOBEX)).status).toBe(429);
    const { status, body } = await limitsAs(OPS);
    expect(status).toBe(200);
    expect(body["liveInstances"]).toBe(1);
    expect(body["shedding"]).toBeUndefined();
    const [acme, globex] = body["tenants"] as Obj[];
    expect(acme).toMatchObject({
      tenant: "acme",
      limits: { runningTasks: 5, pushConfigsPerTask: 10 },
      usage: { tasksLastMinute: expect.any(Number), runningTasks: 2, streams: 0 },
      refusals: { runningTasks: 0 },
    });
    expect(globex).toMatchObject({
      tenant: "globex",
      limits: { runningTasks: 0, requestsPerSecond: 100 },
      refusals: { runningTasks: 1, requestsPerSecond: 0, overload: 0 },
    });
  });

  it("a key sees its own tenant only, without console:all-tenants; the page is served at /console/limits", async () => {
    const own = await limitsAs(ACME);
    expect((own.body["tenants"] as Obj[]).map((row) => row["tenant"])).toEqual(["acme"]);
    expect((await limitsAs(GLOBEX)).status).toBe(403);
    const page = await fetch(`${t.baseUrl}/console/limits`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('href="/console/limits"');
    expect((await fetch(`${t.baseUrl}/console/assets/console-limits.js`)).status).toBe(200);
  });
});
