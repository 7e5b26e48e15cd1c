// The operator console's HTTP surface on the real server: the page without credentials, the API behind
// API keys with the console:operate scope, tasks listed across tenants with filters, a task's state path,
// interrupts answered through the signed-token API, cancel, the live list stream, push deliveries with
// "retry now", and the console switched off.
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PushReceiver, waitFor } from "../support/push-receiver.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const KEYS = {
  operator: "operator-key-0123456789",
  viewer: "viewer-key-0123456789ab",
  acme: "acme-user-key-0123456789",
  globex: "globex-user-key-01234567",
};
const API_KEYS = JSON.stringify([
  { id: "operator", tenant: "acme", key: KEYS.operator, scopes: ["console:operate", "approvals:respond", "runs:cancel", "webhooks:manage"] },
  { id: "viewer", tenant: "acme", key: KEYS.viewer, scopes: ["console:operate"] },
  { id: "acme", tenant: "acme", key: KEYS.acme, scopes: ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage"] },
  { id: "globex", tenant: "globex", key: KEYS.globex, scopes: ["runs:create", "runs:read"] },
]);

describe("operator console API", () => {
  let t: TestApp;
  const hook = new PushReceiver();

  const call = async (method: string, path: string, key?: string, body?: unknown) => {
    const res = await fetch(`${t.baseUrl}${path}`, {
      method,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text };
  };
  const startRun = async (key: string, workflowId: string) => {
    const { status, body } = await call("POST", "/v1/runs", key, { workflowId, inputs: { text: "console" } });
    expect(status).toBe(201);
    return body.runId as string;
  };
  const waitStatus = (taskId: string, status: string) =>
    waitFor(async () => {
      const { body } = await call("GET", `/console/api/tasks/${taskId}`, KEYS.operator);
      return body.task?.status === status && body;
    }, 10_000, `${taskId} ${status}`);

  beforeAll(async () => {
    await hook.start();
    t = await startTestApp({
      API_KEYS,
      PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
      PUSH_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      PUSH_SIGNING_KEY: randomBytes(32).toString("base64"),
      // A failed push waits a minute: only "retry now" can deliver it within the test.
      PUSH_RETRY_BASE_MS: "60000",
      PUSH_RETRY_MAX_MS: "60000",
    });
  });

  afterAll(async () => {
    await t?.close();
    await hook.stop();
  });

  it("serves the page and its assets without credentials, with a strict CSP and no data", async () => {
    const page = await call("GET", "/console");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(page.body).toContain('src="/console/assets/console.js"');
    for (const asset of ["console.js", "console-diagram.js", "console.css", "dagre.esm.js"]) {
      expect((await call("GET", `/console/assets/${asset}`)).status, asset).toBe(200);
    }
    expect((await call("GET", "/console/assets/../../package.json")).status).toBe(401);
  });

  it("the API needs an API key with console:operate", async () => {
    expect((await call("GET", "/console/api/tasks")).status).toBe(401);
    const denied = await call("GET", "/console/api/tasks", KEYS.acme);
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain("console:operate");
    expect((await call("GET", "/console/api/machine", KEYS.viewer)).body.states["waiting-approval"]).toBeDefined();
  });

  it("lists tasks across tenants with filters by tenant, skill, state and id", async () => {
    const acmeRun = await startRun(KEYS.acme, "approval-gate");
    const globexRun = await startRun(KEYS.globex, "echo");
    await waitStatus(acmeRun, "waiting-approval");
    await waitStatus(globexRun, "completed");
    const ids = async (query: string) => ((await call("GET", `/console/api/tasks${query}`, KEYS.viewer)).body.tasks as Array<{ taskId: string }>).map((x) => x.taskId);
    const all = await call("GET", "/console/api/tasks", KEYS.viewer);
    expect(all.body.tenants.sort()).toEqual(["acme", "globex"]);
    expect(await ids("")).toEqual(expect.arrayContaining([acmeRun, globexRun]));
    expect(await ids("?tenant=globex")).toEqual([globexRun]);
    expect(await ids("?skill=approval-gate")).toEqual([acmeRun]);
    expect(await ids("?state=input-required")).toEqual([acmeRun]);
    expect(await ids(`?q=${globexRun.slice(0, 8)}`)).toEqual([globexRun]);
    expect((await call("GET", "/console/api/tasks?state=bogus", KEYS.viewer)).status).toBe(400);
  });

  it("a task's detail: state path, events, and a resolve token only for approvals:respond; the token resolves it", async () => {
    const runId = await startRun(KEYS.acme, "approval-gate");
    await waitStatus(runId, "waiting-approval");
    const viewer = (await call("GET", `/console/api/tasks/${runId}`, KEYS.viewer)).body;
    expect(viewer.path).toEqual(["pending", "running", "waiting-approval"]);
    expect(viewer.interrupt).toMatchObject({ nodeId: "gate", kind: "approval" });
    expect(viewer.interruptTokens.resolve).toBeUndefined();
    expect(viewer.events.map((e: { type: string }) => e.type)).toContain("interrupt.requested");
    const operator = (await call("GET", `/console/api/tasks/${runId}`, KEYS.operator)).body;
    expect(operator.interruptTokens.resolve).toEqual(expect.any(String));
    const resolved = await call("POST", `/v1/interrupts/${encodeURIComponent(operator.interruptTokens.resolve)}`, undefined, { resumeValue: { action: "accept" } });
    expect(resolved.status).toBe(200);
    const done = await waitStatus(runId, "completed");
    expect(done.path).toEqual(["pending", "running", "waiting-approval", "running", "completed"]);
    expect((await call("GET", `/console/api/tasks/${randomUUID()}`, KEYS.operator)).status).toBe(404);
  });

  it("cancels a task in another tenant, and needs runs:cancel to do it", async () => {
    const runId = await startRun(KEYS.acme, "approval-gate");
    await waitStatus(runId, "waiting-approval");
    expect((await call("POST", `/console/api/tasks/${runId}/cancel`, KEYS.viewer, {})).status).toBe(403);
    expect((await call("POST", `/console/api/tasks/${runId}/cancel`, KEYS.operator, { reason: "operator said so" })).status).toBe(202);
    const cancelled = await waitStatus(runId, "cancelled");
    expect(cancelled.path.slice(-2)).toEqual(["cancelling", "cancelled"]);
  });

  it("streams a summary of every commit", async () => {
    const controller = new AbortController();
    const res = await fetch(`${t.baseUrl}/console/api/tasks/stream`, { headers: { authorization: `Bearer ${KEYS.viewer}` }, signal: controller.signal });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const seen: Array<{ taskId: string; status: string }> = [];
    const reading = readSse(res, (frame) => void (frame.event === undefined && seen.push(frame.data as { taskId: string; status: string }))).catch(() => []);
    const runId = await startRun(KEYS.globex, "echo");
    await waitFor(() => seen.some((s) => s.taskId === runId && s.status === "completed"), 10_000, "the completed commit on the stream");
    controller.abort();
    await reading;
    expect(seen.filter((s) => s.taskId === runId).at(-1)).toMatchObject({ taskId: runId, tenant: "globex", workflowId: "echo", status: "completed", a2aState: "completed" });
  });

  it("shows push deliveries and retries a failed one now", async () => {
    let fail = true;
    hook.reply = (_hit, res) => (fail ? res.writeHead(503).end("down") : res.writeHead(200).end("ok"));
    const rpc = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEYS.acme}` },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "push me" }], metadata: { skillId: "approval-gate" } },
          configuration: { blocking: false, pushNotificationConfig: { url: hook.url("/console-hook"), token: "secret-token" } },
        },
      }),
    });
    const taskId = ((await rpc.json()) as { result: { id: string } }).result.id;
    const failed = await waitFor(async () => {
      const view = (await call("GET", `/console/api/tasks/${taskId}/push`, KEYS.viewer)).body;
      return view.configs?.[0]?.delivery.attempts >= 1 && view;
    }, 10_000, "a failed push attempt");
    expect(failed.enabled).toBe(true);
    expect(failed.configs[0]).toMatchObject({ configId: taskId, target: `http://127.0.0.1:${hook.port}`, delivery: { attempts: 1, lastError: expect.stringContaining("503") } });
    expect(JSON.stringify(failed)).not.toContain("secret-token");
    expect(JSON.stringify(failed)).not.toContain("console-hook");
    expect(Date.parse(failed.configs[0].delivery.nextAttemptAt)).toBeGreaterThan(Date.now() + 10_000);

    fail = false;
    const hitsBefore = hook.forTask(taskId).length;
    expect((await call("POST", `/console/api/tasks/${taskId}/push/${taskId}/retry`, KEYS.viewer)).status).toBe(403);
    expect((await call("POST", `/console/api/tasks/${taskId}/push/${taskId}/retry`, KEYS.operator)).status).toBe(202);
    await waitFor(() => hook.forTask(taskId).length > hitsBefore, 5_000, "the retried push");
    const delivered = await waitFor(async () => {
      const view = (await call("GET", `/console/api/tasks/${taskId}/push`, KEYS.viewer)).body;
      return view.configs[0].delivery.attempts === 0 && view;
    }, 5_000, "the delivery to settle its attempt count");
    expect(delivered.configs[0].delivery.lastError).toBeNull();
    expect((await call("POST", `/console/api/tasks/${taskId}/push/nope/retry`, KEYS.operator)).status).toBe(404);
  });
});

describe("operator console switched off", () => {
  it("CONSOLE_ENABLED=false: neither the page nor the API exists", async () => {
    const t = await startTestApp({ CONSOLE_ENABLED: "false" });
    try {
      expect((await fetch(`${t.baseUrl}/console`)).status).toBe(404);
      expect((await fetch(`${t.baseUrl}/console/api/tasks`)).status).toBe(404);
    } finally {
      await t.close();
    }
  });
});
