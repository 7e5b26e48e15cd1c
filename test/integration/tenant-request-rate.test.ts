// TENANT_LIMITS' request rate on a running host: a tenant over its token bucket is refused on JSON-RPC and on
// HTTP+JSON, each in its own form, and a tenant whose limit is 0 gets nothing, said plainly; others are untouched.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RequestRateLimiter } from "../../src/domain/request-rate-limiter.js";
import { startTestApp, TEST_WORKFLOWS_DIR, type TestApp } from "../support/start-server.js";

const SCOPES = ["runs:create", "runs:read", "runs:cancel", "approvals:respond"];
const KEYS = {
  acme: "acme-key-0123456789abcdef",
  frozen: "frozen-key-0123456789abcdef",
  other: "other-key-0123456789ab",
};

describe("TENANT_LIMITS requestsPerSecond and burst", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      WORKFLOWS_DIR: TEST_WORKFLOWS_DIR,
      API_KEYS: JSON.stringify(
        Object.entries(KEYS).map(([tenant, key]) => ({ id: `${tenant}-key`, tenant, scopes: SCOPES, key })),
      ),
      TENANT_LIMITS: JSON.stringify({
        tenants: { acme: { requestsPerSecond: 1, burst: 3 }, frozen: { requestsPerSecond: 0 } },
      }),
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  const jsonRpc = (tenant: keyof typeof KEYS) =>
    fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS[tenant]}`, "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "GetTask", params: { id: randomUUID() } }),
    });
  const httpJson = (tenant: keyof typeof KEYS) =>
    fetch(`${t.baseUrl}/tasks/${randomUUID()}`, {
      headers: { authorization: `Bearer ${KEYS[tenant]}`, "a2a-version": "1.0" },
    });

  it("JSON-RPC: past the burst, 429 with Retry-After and retryAfterSeconds in the error's data", async () => {
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await jsonRpc("acme"));
    const refused = answers.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(answers.slice(0, 3).map((r) => r.status)).toEqual([200, 200, 200]);
    const body = (await refused[0]!.json()) as { id: unknown; error: { code: number; data: unknown[] } };
    expect(refused[0]!.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/);
    expect(body.id).toBe(7);
    expect(body.error.code).toBe(-32029);
    expect(JSON.stringify(body.error.data)).toContain("retryAfterSeconds");
    // Another tenant is not held back by acme's bucket.
    expect((await jsonRpc("other")).status).toBe(200);
  });

  it("HTTP+JSON: a limit of 0 refuses every request with 429, saying the tenant is allowed none", async () => {
    const answer = await httpJson("frozen");
    expect(answer.status).toBe(429);
    expect(answer.headers.get("retry-after")).toBe("60");
    const body = (await answer.json()) as { error: { status: string; message: string } };
    expect(body.error.status).toBe("RESOURCE_EXHAUSTED");
    expect(body.error.message).toContain("allowed no requestsPerSecond");
    expect((await httpJson("other")).status).toBe(404);
  });
});

describe("the token bucket", () => {
  it("holds burst tokens, refills at the rate, and a refusal takes nothing", () => {
    let now = 0;
    const limiter = new RequestRateLimiter(
      {
        default: {},
        tenants: { a: { requestsPerSecond: 2, burst: 2 } },
        keys: { k: { requestsPerSecond: 1, burst: 1 } },
      },
      () => now,
    );
    limiter.admit("a");
    limiter.admit("a");
    expect(() => limiter.admit("a")).toThrow(/retry after 1 s/);
    now = 500; // one token back at 2 a second
    limiter.admit("a");
    expect(() => limiter.admit("a")).toThrow();
    now = 2_000;
    // The key's own bucket (1 a second, burst 1) binds before the tenant's.
    limiter.admit("a", "k");
    expect(() => limiter.admit("a", "k")).toThrow(/limit of 1/);
    // The refusal took nothing from the tenant's bucket: one token is still there for a keyless request.
    limiter.admit("a");
  });
});
