// The operator console's HTTP surface on the real server: the page without credentials, the API behind
// API keys with the console:operate scope, tenant-scoped (a key sees its own tenant; console:all-tenants sees
// every configured tenant; another tenant's task is not found exactly like an unknown id, on every route),
// tasks listed with filters, a task's state path, interrupts answered through the signed-token API, cancel,
// the live list stream, push deliveries with "retry now", and the console switched off.
import { randomBytes, randomUUID } from "node:crypto";
import { readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PushReceiver, waitFor } from "../support/push-receiver.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const KEYS = {
  operator: "operator-key-0123456789",
  viewer: "viewer-key-0123456789ab",
  acme: "acme-user-key-0123456789",
  globex: "globex-user-key-01234567",
  globexOperator: "globex-operator-key-0123",
  ops: "ops-all-tenants-key-01234",
  wideNoConsole: "wide-no-console-key-01234",
};
const API_KEYS = JSON.stringify([
  {
    id: "operator",
    tenant: "acme",
    key: KEYS.operator,
    scopes: ["console:operate", "approvals:respond", "runs:cancel", "webhooks:manage"],
  },
  { id: "viewer", tenant: "acme", key: KEYS.viewer, scopes: ["console:operate"] },
  {
    id: "acme",
    tenant: "acme",
    key: KEYS.acme,
    scopes: ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage"],
  },
  { id: "globex", tenant: "globex", key: KEYS.globex, scopes: ["runs:create", "runs:read"] },
  // Tenant B's operator: every console power, in its own tenant.
  {
    id: "globex-operator",
    tenant: "globex",
    key: KEYS.globexOperator,
    scopes: ["console:operate", "approvals:respond", "runs:cancel", "runs:read", "webhooks:manage"],
  },
  // The explicit grant to see every tenant.
  { id: "ops-1", tenant: "ops", key: KEYS.ops, scopes: ["console:operate", "console:all-tenants", "runs:cancel"] },
  // The grant without the console itself opens nothing.
  { id: "wide", tenant: "acme", key: KEYS.wideNoConsole, scopes: ["console:all-tenants", "runs:read"] },
]);

describe("operator console API", () => {
  let t: TestApp;
  const hook = new PushReceiver();
  /** An approval-gate task of tenant acme, registered for push to `hookPath` on the receiver with `token`. */
  const startWithPush = async (text: string, hookPath: string, token: string): Promise<string> => {
    const rpc = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEYS.acme}` },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text }],
            metadata: { skillId: "approval-gate" },
          },
          configuration: { blocking: false, pushNotificationConfig: { url: hook.url(hookPath), token } },
        },
      }),
    });
    return ((await rpc.json()) as { result: { id: string } }).result.id;
  };

  const call = async (method: string, path: string, key?: string, body?: unknown) => {
    const res = await fetch(`${t.baseUrl}${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      body: res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : text,
    };
  };
  const startRun = async (key: string, workflowId: string) => {
    const { status, body } = await call("POST", "/v1/runs", key, { workflowId, inputs: { text: "console" } });
    expect(status).toBe(201);
    return body.runId as string;
  };
  const waitStatus = (taskId: string, status: string) =>
    waitFor(
      async () => {
        const { body } = await call("GET", `/console/api/tasks/${taskId}`, KEYS.ops);
        return body.task?.status === status && body;
      },
      10_000,
      `${taskId} ${status}`,
    );

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

  it("serves every module of the console's script, as JavaScript under the same CSP, the page preloading the static ones", async () => {
    const page = await call("GET", "/console");
    const preloaded = new Set(
      [...String(page.body).matchAll(/<link rel="modulepreload" href="\/console\/assets\/([a-z.-]+)">/g)].map(
        (m) => m[1]!,
      ),
    );
    // From console.js, every module imported statically (`from "./x.js"`) or on demand (`import("/console/assets/x.js")`).
    const imported = new Set<string>();
    const lazy = new Set<string>();
    const queue = ["console.js"];
    const served = new Set<string>();
    while (queue.length > 0) {
      const name = queue.shift()!;
      if (served.has(name)) continue;
      served.add(name);
      const res = await call("GET", `/console/assets/${name}`);
      expect(res.status, name).toBe(200);
      expect(res.headers.get("content-type"), name).toBe("text/javascript; charset=utf-8");
      expect(res.headers.get("cache-control"), name).toBe("no-cache");
      expect(res.headers.get("content-security-policy"), name).toBe(page.headers.get("content-security-policy"));
      const body = String(res.body);
      for (const m of body.matchAll(/^import [^;]*? from "\.\/([a-z.-]+)";$/gm)) {
        imported.add(m[1]!);
        queue.push(m[1]!);
      }
      for (const m of body.matchAll(/import\("\/console\/assets\/([a-z.-]+)"\)/g)) {
        lazy.add(m[1]!);
        queue.push(m[1]!);
      }
    }
    expect(imported.size).toBeGreaterThan(5);
    expect(lazy.has("console-diagram.js")).toBe(true);
    // What console.js needs before it runs is fetched at once, not one level of imports after another; what
    // it imports on demand is not.
    expect(preloaded).toEqual(imported);
    for (const name of lazy) expect(preloaded.has(name), name).toBe(false);
    // No script in the assets folder is left out of the page's module graph (dagre comes from its package).
    const scripts = readdirSync(new URL("../../src/console/assets/", import.meta.url)).filter((f) => f.endsWith(".js"));
    expect(new Set(scripts)).toEqual(served);
  });

  it("links every style sheet of the assets folder, in order, each served as CSS under the same CSP", async () => {
    const page = await call("GET", "/console");
    const linked = [...String(page.body).matchAll(/<link rel="stylesheet" href="\/console\/assets\/([a-z.-]+)">/g)].map(
      (m) => m[1]!,
    );
    // Each sheet adds to the one before: the base first.
    expect(linked[0]).toBe("console.css");
    const sheets = readdirSync(new URL("../../src/console/assets/", import.meta.url)).filter((f) => f.endsWith(".css"));
    expect(new Set(linked)).toEqual(new Set(sheets));
    for (const name of linked) {
      const res = await call("GET", `/console/assets/${name}`);
      expect(res.status, name).toBe(200);
      expect(res.headers.get("content-type"), name).toBe("text/css; charset=utf-8");
      expect(res.headers.get("content-security-policy"), name).toBe(page.headers.get("content-security-policy"));
    }
  });

  it("serves a favicon without credentials: /favicon.ico (an icon file) and the SVG the page links", async () => {
    const ico = await fetch(`${t.baseUrl}/favicon.ico`);
    expect(ico.status).toBe(200);
    expect(ico.headers.get("content-type")).toBe("image/x-icon");
    // An ICO header: reserved 0, type 1 (icon), one image.
    expect([...new Uint8Array(await ico.arrayBuffer()).slice(0, 6)]).toEqual([0, 0, 1, 0, 1, 0]);
    const page = await call("GET", "/console");
    expect(page.body).toContain('<link rel="icon" href="/console/assets/favicon.svg"');
    const svg = await call("GET", "/console/assets/favicon.svg");
    expect(svg.status).toBe(200);
    expect(svg.headers.get("content-type")).toBe("image/svg+xml");
  });

  it("the API needs an API key with console:operate", async () => {
    expect((await call("GET", "/console/api/tasks")).status).toBe(401);
    const denied = await call("GET", "/console/api/tasks", KEYS.acme);
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain("console:operate");
    const wide = await call("GET", "/console/api/tasks", KEYS.wideNoConsole);
    expect(wide.status).toBe(403);
    expect(wide.body.message).toContain("console:operate");
    expect((await call("GET", "/console/api/machine", KEYS.viewer)).body.states["waiting-approval"]).toBeDefined();
  });

  it("lists tasks with filters by tenant, skill, state and id: across tenants only with console:all-tenants", async () => {
    const acmeRun = await startRun(KEYS.acme, "approval-gate");
    const globexRun = await startRun(KEYS.globex, "echo");
    await waitStatus(acmeRun, "waiting-approval");
    await waitStatus(globexRun, "completed");
    const tasksOf = async (query: string, key = KEYS.ops) =>
      (await call("GET", `/console/api/tasks${query}`, key)).body.tasks as Array<{ taskId: string; tenant: string }>;
    const ids = async (query: string, key = KEYS.ops) => (await tasksOf(query, key)).map((x) => x.taskId);
    // The all-tenants grant: every configured tenant, each task saying which tenant it is in.
    const all = await call("GET", "/console/api/tasks", KEYS.ops);
    expect(all.body.tenants.sort()).toEqual(["acme", "globex", "ops"]);
    expect(await tasksOf("")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ taskId: acmeRun, tenant: "acme" }),
        expect.objectContaining({ taskId: globexRun, tenant: "globex" }),
      ]),
    );
    expect(await ids("?tenant=globex")).toEqual([globexRun]);
    expect(await ids("?skill=approval-gate")).toEqual([acmeRun]);
    expect(await ids("?state=input-required")).toEqual([acmeRun]);
    expect(await ids(`?q=${globexRun.slice(0, 8)}`)).toEqual([globexRun]);
    expect((await call("GET", "/console/api/tasks?state=bogus", KEYS.ops)).status).toBe(400);
    // A per-tenant key: its own tenant only, whatever the filter asks.
    const own = await call("GET", "/console/api/tasks", KEYS.viewer);
    expect(own.body.tenants).toEqual(["acme"]);
    expect(await ids("", KEYS.viewer)).toContain(acmeRun);
    expect((await tasksOf("", KEYS.viewer)).every((x) => x.tenant === "acme")).toBe(true);
    expect(await ids("?tenant=globex", KEYS.viewer)).toEqual([]);
    expect(await ids(`?q=${globexRun.slice(0, 8)}`, KEYS.viewer)).toEqual([]);
    expect((await call("GET", "/console/api/tasks", KEYS.globexOperator)).body.tenants).toEqual(["globex"]);
    expect(await ids("", KEYS.globexOperator)).toContain(globexRun);
    expect(await ids("", KEYS.globexOperator)).not.toContain(acmeRun);
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
    const resolved = await call(
      "POST",
      `/v1/interrupts/${encodeURIComponent(operator.interruptTokens.resolve)}`,
      undefined,
      { resumeValue: { action: "accept" } },
    );
    expect(resolved.status).toBe(200);
    const done = await waitStatus(runId, "completed");
    expect(done.path).toEqual(["pending", "running", "waiting-approval", "running", "completed"]);
    expect((await call("GET", `/console/api/tasks/${randomUUID()}`, KEYS.operator)).status).toBe(404);
  });

  it("cancels a task, and needs runs:cancel to do it", async () => {
    const runId = await startRun(KEYS.acme, "approval-gate");
    await waitStatus(runId, "waiting-approval");
    expect((await call("POST", `/console/api/tasks/${runId}/cancel`, KEYS.viewer, {})).status).toBe(403);
    expect(
      (await call("POST", `/console/api/tasks/${runId}/cancel`, KEYS.operator, { reason: "operator said so" })).status,
    ).toBe(202);
    const cancelled = await waitStatus(runId, "cancelled");
    expect(cancelled.path.slice(-2)).toEqual(["cancelling", "cancelled"]);
  });

  it("streams a summary of every commit the key may see", async () => {
    const open = async (key: string) => {
      const controller = new AbortController();
      const res = await fetch(`${t.baseUrl}/console/api/tasks/stream`, {
        headers: { authorization: `Bearer ${key}` },
        signal: controller.signal,
      });
      expect(res.headers.get("content-type")).toBe("text/event-stream");
      const seen: Array<{ taskId: string; tenant: string; status: string }> = [];
      const reading = readSse(
        res,
        (frame) =>
          void (
            frame.event === undefined && seen.push(frame.data as { taskId: string; tenant: string; status: string })
          ),
      ).catch(() => []);
      return { seen, close: async () => (controller.abort(), await reading) };
    };
    const wide = await open(KEYS.ops);
    const acmeView = await open(KEYS.viewer);
    const globexView = await open(KEYS.globexOperator);
    const acmeRun = await startRun(KEYS.acme, "echo");
    await waitFor(
      () => wide.seen.some((s) => s.taskId === acmeRun && s.status === "completed"),
      10_000,
      "acme's completed commit on the wide stream",
    );
    const runId = await startRun(KEYS.globex, "echo");
    const completed = (stream: { seen: Array<{ taskId: string; status: string }> }, id: string) =>
      stream.seen.some((s) => s.taskId === id && s.status === "completed");
    await waitFor(
      () => completed(wide, runId) && completed(globexView, runId) && completed(acmeView, acmeRun),
      10_000,
      "the completed commits on the streams",
    );
    // Commits go out in order: the globex stream had acme's commits before globex's last one, and skipped them.
    await Promise.all([wide.close(), acmeView.close(), globexView.close()]);
    expect(wide.seen.filter((s) => s.taskId === runId).at(-1)).toMatchObject({
      taskId: runId,
      tenant: "globex",
      workflowId: "echo",
      status: "completed",
      a2aState: "completed",
    });
    expect(globexView.seen.filter((s) => s.taskId === runId).at(-1)).toMatchObject({
      taskId: runId,
      tenant: "globex",
      status: "completed",
    });
    expect(globexView.seen.every((s) => s.tenant === "globex")).toBe(true);
    expect(globexView.seen.some((s) => s.taskId === acmeRun)).toBe(false);
    expect(acmeView.seen.every((s) => s.tenant === "acme")).toBe(true);
    expect(acmeView.seen.some((s) => s.taskId === runId)).toBe(false);
  });

  it("shows push deliveries and retries a failed one now", async () => {
    let fail = true;
    hook.reply = (_hit, res) => (fail ? res.writeHead(503).end("down") : res.writeHead(200).end("ok"));
    const taskId = await startWithPush("push me", "/console-hook", "secret-token");
    const failed = await waitFor(
      async () => {
        const view = (await call("GET", `/console/api/tasks/${taskId}/push`, KEYS.viewer)).body;
        return view.configs?.[0]?.delivery.attempts >= 1 && view;
      },
      10_000,
      "a failed push attempt",
    );
    expect(failed.enabled).toBe(true);
    expect(failed.configs[0]).toMatchObject({
      configId: taskId,
      target: `http://127.0.0.1:${hook.port}`,
      delivery: { attempts: 1, lastError: expect.stringContaining("503") },
    });
    expect(JSON.stringify(failed)).not.toContain("secret-token");
    expect(JSON.stringify(failed)).not.toContain("console-hook");
    expect(Date.parse(failed.configs[0].delivery.nextAttemptAt)).toBeGreaterThan(Date.now() + 10_000);

    fail = false;
    const hitsBefore = hook.forTask(taskId).length;
    expect((await call("POST", `/console/api/tasks/${taskId}/push/${taskId}/retry`, KEYS.viewer)).status).toBe(403);
    expect((await call("POST", `/console/api/tasks/${taskId}/push/${taskId}/retry`, KEYS.operator)).status).toBe(202);
    await waitFor(() => hook.forTask(taskId).length > hitsBefore, 5_000, "the retried push");
    const delivered = await waitFor(
      async () => {
        const view = (await call("GET", `/console/api/tasks/${taskId}/push`, KEYS.viewer)).body;
        return view.configs[0].delivery.attempts === 0 && view;
      },
      5_000,
      "the delivery to settle its attempt count",
    );
    expect(delivered.configs[0].delivery.lastError).toBeNull();
    expect((await call("POST", `/console/api/tasks/${taskId}/push/nope/retry`, KEYS.operator)).status).toBe(404);
  });

  it("retries the pushes of selected tasks in bulk: each task's unsettled configs, another tenant's task not found", async () => {
    let fail = true;
    hook.reply = (_hit, res) => (fail ? res.writeHead(503).end("down") : res.writeHead(200).end("ok"));
    const send = async (key: string) => {
      const rpc = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
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
              parts: [{ kind: "text", text: "bulk push" }],
              metadata: { skillId: "approval-gate" },
            },
            configuration: {
              blocking: false,
              pushNotificationConfig: { url: hook.url("/bulk-hook"), token: "bulk-token" },
            },
          },
        }),
      });
      return ((await rpc.json()) as { result: { id: string } }).result.id;
    };
    const [a, b] = [await send(KEYS.acme), await send(KEYS.acme)];
    for (const id of [a, b]) {
      await waitFor(
        async () =>
          (await call("GET", `/console/api/tasks/${id}/push`, KEYS.viewer)).body.configs?.[0]?.delivery.attempts >= 1,
        10_000,
        "a failed push attempt",
      );
    }
    fail = false;
    const before = hook.forTask(a).length + hook.forTask(b).length;
    expect((await call("POST", "/console/api/bulk/retry-push", KEYS.viewer, { taskIds: [a, b] })).status).toBe(403);
    const theirs = await startRun(KEYS.globex, "echo");
    const res = await call("POST", "/console/api/bulk/retry-push", KEYS.operator, { taskIds: [a, b, theirs] });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { taskId: a, ok: true, retried: [a] },
      { taskId: b, ok: true, retried: [b] },
      { taskId: theirs, ok: false, error: { code: "task-not-found", message: `Task not found: ${theirs}` } },
    ]);
    await waitFor(() => hook.forTask(a).length + hook.forTask(b).length >= before + 2, 5_000, "the retried pushes");
    expect((await call("POST", "/console/api/bulk/retry-push", KEYS.operator, { taskIds: [] })).status).toBe(400);
  });

  it('steers a task (docs/operating.md "Steering a task"): scoped, tenant-bound, in the timeline under the operator\'s name', async () => {
    const taskId = await startRun(KEYS.acme, "approval-gate");
    await waitStatus(taskId, "waiting-approval");
    // Another tenant's operator, and another tenant's API key: not found, as an unknown id. No scope: 403.
    expect((await call("POST", `/console/api/tasks/${taskId}/pause`, KEYS.globexOperator, {})).status).toBe(404);
    expect((await call("POST", `/v1/runs/${taskId}:pause`, KEYS.globex, {})).status).toBe(403);
    expect((await call("POST", `/console/api/tasks/${taskId}/pause`, KEYS.viewer, {})).status).toBe(403);
    // Retry and restart also need runs:create, which the operator key lacks.
    const restart = await call("POST", `/console/api/tasks/${taskId}/restart`, KEYS.operator, { nodeId: "prepare" });
    expect(restart.status).toBe(403);
    expect(restart.body.message).toContain("runs:create");

    const paused = await call("POST", `/console/api/tasks/${taskId}/pause`, KEYS.operator, { reason: "audit" });
    expect(paused.status).toBe(202);
    expect(paused.body).toMatchObject({ taskId, status: "paused", a2aState: "working" });
    const resumed = await call("POST", `/v1/runs/${taskId}:resume`, KEYS.acme, {});
    expect(resumed.body).toMatchObject({ status: "waiting-approval" });
    const detail = (await call("GET", `/console/api/tasks/${taskId}`, KEYS.operator)).body;
    expect(detail.path).toEqual(["pending", "running", "waiting-approval", "paused", "waiting-approval"]);
    const steering = detail.events.filter(
      (e: { type: string }) => e.type.startsWith("run.paused") || e.type === "run.resumed",
    );
    expect(
      steering.map((e: { payload: Record<string, unknown> }) => e.payload["pausedBy"] ?? e.payload["resumedBy"]),
    ).toEqual(["apikey:operator", "apikey:acme"]);
  });

  it("another tenant's task is not found on every console route, exactly like an unknown id, and stays as it was", async () => {
    hook.reply = (_hit, res) => res.writeHead(200).end("ok");
    // Tenant A's task, waiting at its gate, with a push config.
    const taskId = await startWithPush("tenant A", "/tenant-a-hook", "tenant-a-token");
    const before = await waitStatus(taskId, "waiting-approval");
    await waitFor(
      async () => (await call("GET", `/console/api/tasks/${taskId}/push`, KEYS.operator)).body.configs?.length === 1,
      10_000,
      "A's push config",
    );
    const pushBefore = (await call("GET", `/console/api/tasks/${taskId}/push`, KEYS.operator)).body;

    const unknown = randomUUID();
    const routes: Array<[method: string, path: (id: string) => string, body?: unknown]> = [
      ["GET", (id) => `/console/api/tasks/${id}`],
      ["GET", (id) => `/console/api/tasks/${id}/events`],
      ["GET", (id) => `/console/api/tasks/${id}/events?after=0`],
      ["POST", (id) => `/console/api/tasks/${id}/cancel`, { reason: "not yours" }],
      ["POST", (id) => `/console/api/tasks/${id}/cancel`],
      ["GET", (id) => `/console/api/tasks/${id}/push`],
      ["POST", (id) => `/console/api/tasks/${id}/push/${id}/retry`],
      ["POST", (id) => `/console/api/tasks/${id}/interrupts/gate`, { resumeValue: { action: "accept" } }],
      // The interrupt answer: the console's way (a resolve token) needs the detail above; the REST way is tenant-scoped too.
      ["POST", (id) => `/v1/runs/${id}/interrupts/gate`, { resumeValue: { action: "accept" } }],
    ];
    for (const [method, path, body] of routes) {
      const what = `${method} ${path("{id}")}`;
      const theirs = await call(method, path(taskId), KEYS.globexOperator, body);
      const none = await call(method, path(unknown), KEYS.globexOperator, body);
      expect(theirs.status, what).toBe(404);
      expect(none.status, what).toBe(404);
      expect(theirs.headers.get("content-type"), what).toBe(none.headers.get("content-type"));
      expect(JSON.stringify(theirs.body).replaceAll(taskId, "{id}"), what).toBe(
        JSON.stringify(none.body).replaceAll(unknown, "{id}"),
      );
    }
    const notFound = await call("GET", `/console/api/tasks/${taskId}`, KEYS.globexOperator);
    expect(JSON.stringify(notFound.body)).not.toContain("acme");

    // A's task is as it was: still waiting at its gate, same version, same push config.
    const after = (await call("GET", `/console/api/tasks/${taskId}`, KEYS.operator)).body;
    expect(after.task).toMatchObject({ status: "waiting-approval", tenant: "acme", version: before.task.version });
    expect(after.events).toEqual(before.events);
    const pushAfter = (await call("GET", `/console/api/tasks/${taskId}/push`, KEYS.operator)).body;
    expect(
      pushAfter.configs.map((c: { configId: string; delivery: { attempts: number } }) => [
        c.configId,
        c.delivery.attempts,
      ]),
    ).toEqual(
      pushBefore.configs.map((c: { configId: string; delivery: { attempts: number } }) => [
        c.configId,
        c.delivery.attempts,
      ]),
    );

    // A's own key sees its own task, its event stream and its push view; the all-tenants grant sees it too.
    expect((await call("GET", `/console/api/tasks/${taskId}`, KEYS.viewer)).status).toBe(200);
    expect((await call("GET", `/console/api/tasks/${taskId}/push`, KEYS.viewer)).status).toBe(200);
    const controller = new AbortController();
    const stream = await fetch(`${t.baseUrl}/console/api/tasks/${taskId}/events`, {
      headers: { authorization: `Bearer ${KEYS.viewer}` },
      signal: controller.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toBe("text/event-stream");
    controller.abort();
    await stream.body?.cancel().catch(() => undefined);
    expect((await call("GET", `/console/api/tasks/${taskId}`, KEYS.ops)).body.task).toMatchObject({
      taskId,
      tenant: "acme",
    });

    // The all-tenants grant acts in the task's own tenant.
    expect(
      (await call("POST", `/console/api/tasks/${taskId}/cancel`, KEYS.ops, { reason: "ops cleanup" })).status,
    ).toBe(202);
    await waitStatus(taskId, "cancelled");
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
