import { createHash, generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from "jose";
import { MongoClient } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import type { Resolver } from "../../src/egress/egress-guard.js";
import { verifyPushSignature } from "../../src/push/push-signature.js";
import { MemoryPushConfigStore } from "../../src/store/memory-push-config-store.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoPushConfigStore } from "../../src/store/mongo-push-config-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { PushConfigStore } from "../../src/store/push-config-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import "../support/mongo.js";
import { PushReceiver, waitFor, type PushHit } from "../support/push-receiver.js";
import { freePort } from "../support/server-process.js";

const SIGNING_KEY = `test-signing-key-${randomBytes(16).toString("hex")}`;
/** Test-only egress allowance (http + loopback), explicit keys, and fast retries. */
const PUSH_TEST_ENV: Record<string, string> = {
  PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
  PUSH_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
  PUSH_SIGNING_KEY: SIGNING_KEY,
  PUSH_RETRY_BASE_MS: "30",
  PUSH_RETRY_MAX_MS: "150",
  PUSH_TIMEOUT_MS: "2000",
  PUSH_BREAKER_COOLDOWN_MS: "100",
};

interface PushApp {
  baseUrl: string;
  app: App;
  close(): Promise<void>;
}

async function startPushApp(
  env: Record<string, string> = {},
  options: { store?: TaskStore; pushConfigs?: PushConfigStore; resolver?: Resolver; logs?: string[] } = {},
): Promise<PushApp> {
  const port = await freePort();
  const config = loadConfig({
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: options.logs ? "debug" : "silent",
    TIMER_POLL_MS: "50",
    SHUTDOWN_GRACE_MS: "1000",
    ...PUSH_TEST_ENV,
    ...env,
  });
  const logs = options.logs;
  const logger = createLogger(config.logLevel, logs ? { write: (line: string) => void logs.push(line) } : undefined);
  const store = options.store ?? new MemoryTaskStore();
  const app = await createApp({
    config,
    logger,
    store,
    durableStore: store.kind === "mongodb",
    ...(options.pushConfigs ? { pushConfigs: options.pushConfigs } : {}),
    ...(options.resolver ? { pushResolver: options.resolver } : {}),
  });
  await app.listen();
  return { baseUrl: `http://127.0.0.1:${port}`, app, close: () => app.close() };
}

type Rpc = { result?: any; error?: { code: number; message: string; data?: Record<string, unknown> } };

async function rpc(base: string, method: string, params: unknown, headers: Record<string, string> = {}): Promise<Rpc> {
  const res = await fetch(`${base}/a2a/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
  });
  return (await res.json()) as Rpc;
}

const message = (text: string, extra: Record<string, unknown> = {}) => ({
  kind: "message",
  messageId: randomUUID(),
  role: "user",
  parts: [{ kind: "text", text }],
  metadata: { skillId: "approval-gate" },
  ...extra,
});
const accept = (taskId: string) => ({
  kind: "message",
  messageId: randomUUID(),
  role: "user",
  taskId,
  parts: [{ kind: "data", data: { action: "accept" } }],
});

/** Starts an approval-gate task (pauses at input-required) with an optional inline push config. */
async function startTask(base: string, push?: Record<string, unknown>): Promise<string> {
  const sent = await rpc(base, "message/send", {
    message: message("Send the quarterly report"),
    ...(push ? { configuration: { pushNotificationConfig: push } } : {}),
  });
  if (!sent.result) throw new Error(`send failed: ${JSON.stringify(sent.error)}`);
  expect(sent.result.status.state).toBe("input-required");
  return sent.result.id as string;
}

const states = (hits: PushHit[]) => hits.map((h) => h.json["status"]?.state as string);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
async function receiver(): Promise<PushReceiver> {
  const r = await new PushReceiver().start();
  cleanups.push(() => r.stop());
  return r;
}
async function pushApp(...args: Parameters<typeof startPushApp>): Promise<PushApp> {
  const t = await startPushApp(...args);
  cleanups.push(() => t.close());
  return t;
}

describe("push notification configs over JSON-RPC", () => {
  it("set / get / list / delete: the id defaults to the task id while it is free, set is an upsert, several configs per task", async () => {
    const hook = await receiver();
    const t = await pushApp();
    const taskId = await startTask(t.baseUrl);

    const first = await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
      taskId,
      pushNotificationConfig: { url: hook.url("/a"), token: "tok-1" },
    });
    // Token and credentials are write-only: no answer carries them (push-secrets-write-only.test.ts, every binding).
    expect(first.result).toEqual({ taskId, pushNotificationConfig: { id: taskId, url: hook.url("/a") } });
    const second = await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
      taskId,
      pushNotificationConfig: {
        id: "ops",
        url: hook.url("/b"),
        authentication: { schemes: ["Bearer"], credentials: "cred-1" },
      },
    });
    expect(second.result.pushNotificationConfig).toEqual({
      id: "ops",
      url: hook.url("/b"),
      authentication: { schemes: ["Bearer"] },
    });

    // get without an id reads the default config; with an id, that one.
    expect(
      (await rpc(t.baseUrl, "tasks/pushNotificationConfig/get", { id: taskId })).result.pushNotificationConfig.url,
    ).toBe(hook.url("/a"));
    expect(
      (await rpc(t.baseUrl, "tasks/pushNotificationConfig/get", { id: taskId, pushNotificationConfigId: "ops" })).result
        .pushNotificationConfig.id,
    ).toBe("ops");

    // upsert: same id, new target.
    await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
      taskId,
      pushNotificationConfig: { id: taskId, url: hook.url("/a2"), token: "tok-2" },
    });
    const listed = await rpc(t.baseUrl, "tasks/pushNotificationConfig/list", { id: taskId });
    expect(listed.result).toEqual([
      { taskId, pushNotificationConfig: { id: taskId, url: hook.url("/a2") } },
      { taskId, pushNotificationConfig: { id: "ops", url: hook.url("/b"), authentication: { schemes: ["Bearer"] } } },
    ]);

    // A2ATaskState carries the url and a token fingerprint, never the token.
    const state = (await (await fetch(`${t.baseUrl}/v1/a2a/tasks/${taskId}`)).json()) as Record<string, any>;
    expect(state["pushConfig"].url).toBe(hook.url("/a2"));
    expect(state["pushConfig"].tokenFingerprint).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.stringify(state)).not.toContain("tok-2");

    expect(
      (await rpc(t.baseUrl, "tasks/pushNotificationConfig/delete", { id: taskId, pushNotificationConfigId: "ops" }))
        .result,
    ).toBeNull();
    expect((await rpc(t.baseUrl, "tasks/pushNotificationConfig/list", { id: taskId })).result).toHaveLength(1);
    const gone = await rpc(t.baseUrl, "tasks/pushNotificationConfig/get", {
      id: taskId,
      pushNotificationConfigId: "ops",
    });
    expect(gone.error?.code).toBe(-32001);
    expect(gone.error?.message).toMatch(/not found/);

    // Unknown task, bad params.
    expect((await rpc(t.baseUrl, "tasks/pushNotificationConfig/list", { id: "nope" })).error?.code).toBe(-32001);
    expect((await rpc(t.baseUrl, "tasks/pushNotificationConfig/delete", { id: taskId })).error?.code).toBe(-32602);
    expect(
      (
        await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
          taskId,
          pushNotificationConfig: { url: hook.url(), token: "bad\r\ntoken" },
        })
      ).error?.code,
    ).toBe(-32602);
  });

  // OpenWOP RFC 0214: two configs created without an id are two configs; neither replaces the other.
  const idlessCreates: Array<[string, (base: string, taskId: string, url: string) => Promise<string>]> = [
    [
      "JSON-RPC 0.3",
      async (base, taskId, url) =>
        (await rpc(base, "tasks/pushNotificationConfig/set", { taskId, pushNotificationConfig: { url } })).result
          .pushNotificationConfig.id,
    ],
    [
      "JSON-RPC 1.0",
      async (base, taskId, url) =>
        (await rpc(base, "CreateTaskPushNotificationConfig", { taskId, url }, { "A2A-Version": "1.0" })).result.id,
    ],
    [
      "HTTP+JSON 0.3",
      async (base, taskId, url) => {
        const res = await fetch(`${base}/v1/tasks/${taskId}/pushNotificationConfigs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ parent: `tasks/${taskId}`, config: { pushNotificationConfig: { url } } }),
        });
        const name = ((await res.json()) as { name: string }).name;
        return name.slice(`tasks/${taskId}/pushNotificationConfigs/`.length);
      },
    ],
    [
      "HTTP+JSON 1.0",
      async (base, taskId, url) => {
        const res = await fetch(`${base}/tasks/${taskId}/pushNotificationConfigs`, {
          method: "POST",
          headers: { "content-type": "application/a2a+json", "A2A-Version": "1.0" },
          body: JSON.stringify({ taskId, url }),
        });
        return ((await res.json()) as { id: string }).id;
      },
    ],
  ];

  it.each(idlessCreates)(
    "%s: a second config created without an id gets its own id instead of replacing the first",
    async (_binding, create) => {
      const hook = await receiver();
      const t = await pushApp();
      const taskId = await startTask(t.baseUrl);
      const first = await create(t.baseUrl, taskId, hook.url("/first"));
      const second = await create(t.baseUrl, taskId, hook.url("/second"));
      expect(first).toBe(taskId);
      expect(second).not.toBe(first);
      expect(second).toMatch(/^[0-9a-f-]{36}$/);
      const listed = (await rpc(t.baseUrl, "tasks/pushNotificationConfig/list", { id: taskId })).result as Array<{
        pushNotificationConfig: { id: string; url: string };
      }>;
      expect(listed.map((c) => [c.pushNotificationConfig.id, c.pushNotificationConfig.url])).toEqual([
        [first, hook.url("/first")],
        [second, hook.url("/second")],
      ]);
    },
  );

  it("discard-on-delete (RFC 0214): of two id-less configs, the deleted one hears nothing more and the other still delivers", async () => {
    const hook = await receiver();
    const t = await pushApp();
    const taskId = await startTask(t.baseUrl);
    const kept = (
      await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
        taskId,
        pushNotificationConfig: { url: hook.url("/kept") },
      })
    ).result.pushNotificationConfig.id as string;
    const dropped = (
      await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
        taskId,
        pushNotificationConfig: { url: hook.url("/dropped") },
      })
    ).result.pushNotificationConfig.id as string;
    expect(dropped).not.toBe(kept);
    expect(
      (await rpc(t.baseUrl, "tasks/pushNotificationConfig/delete", { id: taskId, pushNotificationConfigId: dropped }))
        .result,
    ).toBeNull();
    expect((await rpc(t.baseUrl, "message/send", { message: accept(taskId) })).result.status.state).toBe("completed");
    await waitFor(
      async () =>
        hook.hits.some((h) => h.path === "/kept" && h.json["status"]?.state === "completed") ? true : undefined,
      10_000,
      "the kept config's completed push",
    );
    expect(hook.hits.filter((h) => h.path === "/dropped")).toEqual([]);
    expect(states(hook.hits.filter((h) => h.path === "/kept"))).toEqual(["completed"]);
  });

  it("a config set on a task that already ended pushes nothing and is settled (it then expires with the task)", async () => {
    const hook = await receiver();
    const pushConfigs = new MemoryPushConfigStore();
    const t = await pushApp({}, { pushConfigs });
    const taskId = await startTask(t.baseUrl);
    expect((await rpc(t.baseUrl, "message/send", { message: accept(taskId) })).result.status.state).toBe("completed");
    expect(
      (
        await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
          taskId,
          pushNotificationConfig: { url: hook.url() },
        })
      ).result.pushNotificationConfig.id,
    ).toBe(taskId);
    const settled = await waitFor(
      async () => {
        const stored = await pushConfigs.get(taskId, taskId);
        return stored?.delivery.settled ? stored : undefined;
      },
      10_000,
      "the config to settle",
    );
    expect(settled.expireAt).not.toBeNull();
    expect(hook.hits).toHaveLength(0);
  });

  it("inline config on message/send: input-required and completed arrive in order, signed, with token, Authorization and event id; the body is content-free", async () => {
    const hook = await receiver();
    const t = await pushApp();
    const taskId = await startTask(t.baseUrl, {
      url: hook.url("/inline?client=1"),
      token: "inline-token",
      authentication: { schemes: ["Bearer"], credentials: "inline-cred" },
    });
    await waitFor(() => hook.forTask(taskId).length >= 1, 10_000, "the input-required push");
    const done = await rpc(t.baseUrl, "message/send", { message: accept(taskId) });
    expect(done.result.status.state).toBe("completed");
    const hits = await waitFor(
      () => (hook.forTask(taskId).length >= 2 ? hook.forTask(taskId) : undefined),
      10_000,
      "the completed push",
    );

    expect(states(hits)).toEqual(["input-required", "completed"]);
    const [paused, completed] = hits as [PushHit, PushHit];
    expect(paused.path).toBe("/inline?client=1");
    expect(paused.headers["content-type"]).toBe("application/json");
    expect(paused.headers["x-a2a-notification-token"]).toBe("inline-token");
    expect(paused.headers["authorization"]).toBe("Bearer inline-cred");
    expect(paused.headers["x-a2a-event-id"]).toBe(paused.json["metadata"].openwop.eventId);
    expect(paused.headers["x-a2a-event-id"]).toMatch(new RegExp(`^${taskId}:\\d+$`));
    for (const hit of hits) {
      expect(
        verifyPushSignature({
          key: SIGNING_KEY,
          body: hit.body,
          timestamp: hit.headers["x-openwop-timestamp"] as string,
          signature: hit.headers["x-openwop-signature"] as string,
        }),
      ).toBe(true);
      expect(
        verifyPushSignature({
          key: "another-key-of-at-least-32-characters!",
          body: hit.body,
          timestamp: hit.headers["x-openwop-timestamp"] as string,
          signature: hit.headers["x-openwop-signature"] as string,
        }),
      ).toBe(false);
    }
    expect(paused.json).toMatchObject({
      kind: "status-update",
      taskId,
      final: false,
      status: { state: "input-required" },
      metadata: { openwop: { runId: taskId, interrupt: { kind: "approval" } } },
    });
    expect(completed.json).toMatchObject({
      kind: "status-update",
      taskId,
      final: true,
      status: { state: "completed" },
    });
    expect(completed.json["metadata"].openwop.artifacts.map((a: { name: string }) => a.name)).toEqual([
      "proposal",
      "result",
    ]);
    // No message, history, run input, artifact content or interrupt data.
    for (const hit of hits) {
      expect(hit.json["status"].message).toBeUndefined();
      expect(hit.body).not.toContain("quarterly report");
      expect(hit.json["metadata"].openwop.interrupt?.data).toBeUndefined();
      expect(Object.keys(hit.json).sort()).toEqual(["contextId", "final", "kind", "metadata", "status", "taskId"]);
    }
  });

  it("the receiver is down, then up: every push arrives, in order (all transitions)", async () => {
    const hook = await receiver();
    const port = hook.port;
    await hook.stop();
    const t = await pushApp({ PUSH_TRANSITIONS: "all", PUSH_BREAKER_THRESHOLD: "3" });
    const taskId = await startTask(t.baseUrl, { url: `http://127.0.0.1:${port}/hook` });
    expect((await rpc(t.baseUrl, "message/send", { message: accept(taskId) })).result.status.state).toBe("completed");
    await new Promise((r) => setTimeout(r, 300)); // several failed attempts and a breaker opening
    expect(hook.hits).toHaveLength(0);
    await hook.start(port);
    const hits = await waitFor(
      () => (states(hook.forTask(taskId)).includes("completed") ? hook.forTask(taskId) : undefined),
      15_000,
      "all pushes",
    );
    expect(states(hits)).toEqual(["submitted", "working", "input-required", "working", "completed"]);
    const sequences = hits.map((h) => h.json["metadata"].openwop.sequence as number);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(hits.map((h) => h.headers["x-a2a-event-id"])).size).toBe(hits.length);
  });

  it("a redirect is refused (never followed) and the push goes to the dead letters", async () => {
    const target = await receiver();
    const hook = await receiver();
    hook.reply = (_hit, res) => res.writeHead(302, { location: target.url("/stolen") }).end();
    const t = await pushApp();
    const taskId = await startTask(t.baseUrl, { url: hook.url("/redirecting") });
    const letters = await waitFor(
      async () => {
        const res = await fetch(`${t.baseUrl}/v1/push/dead-letters?taskId=${taskId}`);
        const body = (await res.json()) as { deadLetters: Array<Record<string, any>> };
        return body.deadLetters.length > 0 ? body.deadLetters : undefined;
      },
      10_000,
      "a dead letter",
    );
    expect(letters[0]).toMatchObject({
      taskId,
      configId: taskId,
      state: "input-required",
      reason: "not-retryable",
      attempts: 1,
      target: `http://127.0.0.1:${hook.port}`,
    });
    expect(letters[0]!["lastError"]).toMatch(/redirect refused/);
    expect(hook.hits).toHaveLength(1);
    expect(target.hits).toHaveLength(0);
  });

  it("a slow receiver times out, is retried, then dead-lettered; a healthy webhook on the same task is not held up", async () => {
    const slow = await receiver();
    slow.reply = (_hit, res) => void setTimeout(() => res.writeHead(200).end(), 2_500);
    const fast = await receiver();
    const t = await pushApp({ PUSH_TIMEOUT_MS: "1000", PUSH_MAX_ATTEMPTS: "2" });
    const taskId = await startTask(t.baseUrl);
    await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
      taskId,
      pushNotificationConfig: { id: "slow", url: slow.url("/slow") },
    });
    await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
      taskId,
      pushNotificationConfig: { id: "fast", url: fast.url("/fast") },
    });
    expect((await rpc(t.baseUrl, "message/send", { message: accept(taskId) })).result.status.state).toBe("completed");

    await waitFor(() => fast.forTask(taskId).length >= 1, 10_000, "the fast webhook's push");
    const lettersWhenFastArrived = (await (
      await fetch(`${t.baseUrl}/v1/push/dead-letters?taskId=${taskId}`)
    ).json()) as { deadLetters: unknown[] };
    expect(lettersWhenFastArrived.deadLetters).toHaveLength(0);

    const letters = await waitFor(
      async () => {
        const body = (await (await fetch(`${t.baseUrl}/v1/push/dead-letters?taskId=${taskId}`)).json()) as {
          deadLetters: Array<Record<string, any>>;
        };
        return body.deadLetters.length > 0 ? body.deadLetters : undefined;
      },
      10_000,
      "the slow webhook's dead letter",
    );
    expect(letters[0]).toMatchObject({ configId: "slow", state: "completed", reason: "max-attempts", attempts: 2 });
    expect(letters[0]!["lastError"]).toMatch(/timeout after 1000 ms/);
    expect(slow.forTask(taskId)).toHaveLength(2);
    expect(states(fast.forTask(taskId))).toEqual(["completed"]);
  });

  it("a circuit breaker per origin: a failing webhook is left alone while it is open, others keep being served", async () => {
    const failing = await receiver();
    failing.reply = (_hit, res) => res.writeHead(503).end();
    const healthy = await receiver();
    const t = await pushApp({
      PUSH_BREAKER_THRESHOLD: "2",
      PUSH_BREAKER_COOLDOWN_MS: "60000",
      PUSH_MAX_ATTEMPTS: "50",
    });
    const broken = await startTask(t.baseUrl, { url: failing.url() });
    await waitFor(() => failing.hits.length >= 2, 10_000, "two failed attempts");
    await new Promise((r) => setTimeout(r, 400)); // many retry periods (30–150 ms) while the breaker is open
    expect(failing.hits).toHaveLength(2);
    const other = await startTask(t.baseUrl, { url: healthy.url() });
    await waitFor(() => healthy.forTask(other).length >= 1, 10_000, "the healthy webhook's push");
    expect(failing.forTask(broken)).toHaveLength(2);
    const config = await t.app.push.configs.get(broken, undefined, { tenant: "default", id: "test", scopes: "*" });
    expect(config.pushNotificationConfig.url).toBe(failing.url());
  });

  it("after an outage the breaker does not over-escalate: pending pushes resume within one cool-down plus one retry interval of the receiver's return", async () => {
    const cooldownMs = 500;
    const retryMaxMs = 200;
    const hook = await receiver();
    let down = true;
    // Slow 503s while down, so several attempts are in flight when the breaker opens.
    hook.reply = (_hit, res) =>
      down ? void setTimeout(() => res.writeHead(503).end(), 100) : res.writeHead(200).end("ok");
    const t = await pushApp({
      PUSH_TRANSITIONS: "all",
      PUSH_BREAKER_THRESHOLD: "2",
      PUSH_BREAKER_COOLDOWN_MS: String(cooldownMs),
      PUSH_RETRY_BASE_MS: "50",
      PUSH_RETRY_MAX_MS: String(retryMaxMs),
      PUSH_MAX_ATTEMPTS: "1000",
    });
    const taskIds = await Promise.all(Array.from({ length: 6 }, () => startTask(t.baseUrl, { url: hook.url() })));
    await waitFor(() => hook.hits.length >= 4, 10_000, "failed attempts");
    // Many cool-downs long: with in-flight failures counted as openings the cool-down would grow to 32x (16 s).
    await new Promise((r) => setTimeout(r, 3_000));
    const failedDuringOutage = hook.hits.length;
    down = false;
    const backAt = Date.now();
    await waitFor(
      () => taskIds.every((id) => states(hook.forTask(id).filter((h) => h.at >= backAt)).includes("input-required")),
      15_000,
      "every pending push after the receiver returned",
    );
    const lastArrival = Math.max(
      ...taskIds.map(
        (id) => hook.forTask(id).find((h) => h.at >= backAt && h.json["status"].state === "input-required")!.at,
      ),
    );
    // One cool-down (the next probe) plus one retry interval (deliveries that failed last), with slack for a loaded machine.
    const bound = cooldownMs + retryMaxMs + 2_500;
    expect(lastArrival - backAt).toBeLessThanOrEqual(bound);
    // While open, the breaker held attempts back: about one probe per cool-down, not one per retry interval per task.
    expect(failedDuringOutage).toBeLessThan(6 * (3_000 / retryMaxMs));
  });
});

describe("JWT-signed pushes (authentication.schemes Bearer without credentials)", () => {
  it("each delivery carries a JWT the receiver verifies through the host's JWKS (createRemoteJWKSet): iss, aud, iat, exp <= 5 min, unique jti, taskId, kid", async () => {
    // SIGNING_KEYS takes PEM (this host, ES256) and JWK (a second host, Ed25519, whose keys must not verify the first's JWTs).
    const es256 = generateKeyPairSync("ec", { namedCurve: "P-256" })
      .privateKey.export({ format: "pem", type: "pkcs8" })
      .toString();
    const ed25519 = { ...generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }), kid: "next" };
    const hook = await receiver();
    const t = await pushApp({ SIGNING_KEYS: es256, PUSH_TRANSITIONS: "all" });
    const published = await fetch(`${t.baseUrl}/.well-known/jwks.json`);
    expect(published.headers.get("content-type")).toBe("application/jwk-set+json");
    expect(published.headers.get("cache-control")).toBe("public, max-age=300");
    const jwks = (await published.json()) as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys).toHaveLength(1);
    expect(JSON.stringify(jwks)).not.toContain('"d"');
    const t2 = await pushApp({ SIGNING_KEYS: JSON.stringify([ed25519]) });
    const otherJwks = createRemoteJWKSet(new URL(`${t2.baseUrl}/.well-known/jwks.json`));

    // The receiver: verifies every push with the host's published keys, answers 401 when that fails.
    const hostJwks = createRemoteJWKSet(new URL(`${t.baseUrl}/.well-known/jwks.json`));
    const verified: Array<{ payload: JWTPayload; kid: string | undefined }> = [];
    const refused: string[] = [];
    hook.reply = (hit, res) => {
      const token = /^Bearer (.+)$/.exec(hit.headers["authorization"] ?? "")?.[1] ?? "";
      jwtVerify(token, hostJwks, {
        issuer: t.baseUrl,
        audience: hook.url("/jwt"),
        algorithms: ["ES256", "EdDSA"],
        requiredClaims: ["iat", "exp", "jti", "taskId"],
        maxTokenAge: "5 min",
      }).then(
        ({ payload, protectedHeader }) => {
          verified.push({ payload, kid: protectedHeader.kid });
          res.writeHead(200).end("ok");
        },
        (err: Error) => {
          refused.push(err.message);
          res.writeHead(401).end();
        },
      );
    };
    const taskId = await startTask(t.baseUrl, {
      url: hook.url("/jwt"),
      token: "jwt-token",
      authentication: { schemes: ["Bearer"] },
    });
    expect((await rpc(t.baseUrl, "message/send", { message: accept(taskId) })).result.status.state).toBe("completed");
    await waitFor(
      () =>
        verified.some(
          (v) => v.payload["taskId"] === taskId && hook.hits.some((h) => h.json["status"]?.state === "completed"),
        ) &&
        verified.length === hook.hits.length &&
        verified.length >= 3,
      10_000,
      "the verified pushes",
    );
    expect(refused).toEqual([]);

    for (const { payload, kid } of verified) {
      expect(kid).toBe(jwks.keys[0]!["kid"]);
      expect(payload["taskId"]).toBe(taskId);
      expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(300);
      expect(payload.exp! - payload.iat!).toBeGreaterThan(0);
    }
    // Each JWT covers its own body (request_body_sha256 of the exact bytes).
    for (const hit of hook.hits) {
      const { payload } = await jwtVerify((hit.headers["authorization"] as string).slice("Bearer ".length), hostJwks, {
        issuer: t.baseUrl,
        audience: hook.url("/jwt"),
      });
      expect(payload["request_body_sha256"]).toBe(createHash("sha256").update(hit.body, "utf8").digest("hex"));
    }
    expect(new Set(verified.map((v) => v.payload.jti)).size).toBe(verified.length);
    // The HMAC scheme and the notification token stay alongside the JWT.
    for (const hit of hook.hits) {
      expect(hit.headers["x-a2a-notification-token"]).toBe("jwt-token");
      expect(
        verifyPushSignature({
          key: SIGNING_KEY,
          body: hit.body,
          timestamp: hit.headers["x-openwop-timestamp"] as string,
          signature: hit.headers["x-openwop-signature"] as string,
        }),
      ).toBe(true);
    }
    // Another host's keys do not verify it, and neither does another audience.
    const jwt = (hook.hits[0]!.headers["authorization"] as string).slice("Bearer ".length);
    expect(decodeProtectedHeader(jwt)).toMatchObject({ alg: "ES256", typ: "JWT" });
    await expect(jwtVerify(jwt, otherJwks)).rejects.toThrow();
    await expect(jwtVerify(jwt, hostJwks, { issuer: t.baseUrl, audience: hook.url("/elsewhere") })).rejects.toThrow(
      /aud/,
    );
  });

  it("rotation: with two keys the first signs, both are published; credentials given by the client win over the JWT", async () => {
    const first = { ...generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }), kid: "k2" };
    const second = {
      ...generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" }),
      kid: "k1",
    };
    const hook = await receiver();
    const t = await pushApp({ SIGNING_KEYS: JSON.stringify({ keys: [first, second] }) });
    const jwks = (await (await fetch(`${t.baseUrl}/.well-known/jwks.json`)).json()) as {
      keys: Array<Record<string, unknown>>;
    };
    expect(jwks.keys.map((k) => [k["kid"], k["alg"], k["d"]])).toEqual([
      ["k2", "EdDSA", undefined],
      ["k1", "ES256", undefined],
    ]);
    const taskId = await startTask(t.baseUrl, {
      url: hook.url("/jwt"),
      authentication: { schemes: ["Basic", "Bearer"] },
    });
    await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
      taskId,
      pushNotificationConfig: {
        id: "static",
        url: hook.url("/static"),
        authentication: { schemes: ["Bearer"], credentials: "static-cred" },
      },
    });
    expect((await rpc(t.baseUrl, "message/send", { message: accept(taskId) })).result.status.state).toBe("completed");
    await waitFor(
      () => hook.hits.filter((h) => h.json["status"]?.state === "completed").length >= 2,
      10_000,
      "both completed pushes",
    );
    const jwtHit = hook.hits.find((h) => h.path === "/jwt")!;
    const { payload, protectedHeader } = await jwtVerify(
      (jwtHit.headers["authorization"] as string).slice("Bearer ".length),
      createRemoteJWKSet(new URL(`${t.baseUrl}/.well-known/jwks.json`)),
      { issuer: t.baseUrl, audience: hook.url("/jwt") },
    );
    expect(protectedHeader).toMatchObject({ alg: "EdDSA", kid: "k2" });
    expect(payload["taskId"]).toBe(taskId);
    expect(
      hook.hits.filter((h) => h.path === "/static").every((h) => h.headers["authorization"] === "Bearer static-cred"),
    ).toBe(true);
  });
});

describe("the push egress guard at registration", () => {
  const conformanceLegs = [
    { url: "https://10.0.0.5/push", arm: "address" },
    { url: "http://push.example.com/push", arm: "scheme" },
  ];

  it("refuses the conformance URLs with the right arm, before the task is looked up (unknown task id), and stores nothing", async () => {
    const t = await pushApp({ PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "false" });
    for (const { url, arm } of conformanceLegs) {
      const set = await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
        taskId: `unknown-${randomUUID()}`,
        pushNotificationConfig: { url },
      });
      expect(set.error?.code, url).toBe(-32602);
      expect(set.error?.data?.["arm"], url).toBe(arm);
      expect(set.error?.message, url).toMatch(new RegExp(`refused by the ${arm} arm`));
      const inline = await rpc(t.baseUrl, "message/send", {
        message: message("x", { taskId: `unknown-${randomUUID()}` }),
        configuration: { pushNotificationConfig: { url } },
      });
      expect(inline.error?.code, url).toBe(-32602);
      expect(inline.error?.data?.["arm"], url).toBe(arm);
    }
    // Not stored: a real task with a refused inline config is not even created.
    const refused = await rpc(t.baseUrl, "message/send", {
      message: message("x"),
      configuration: { pushNotificationConfig: { url: "https://169.254.169.254/latest" } },
    });
    expect(refused.error?.data?.["arm"]).toBe("address");
    const taskId = await startTask(t.baseUrl);
    expect(
      (
        await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
          taskId,
          pushNotificationConfig: { url: "https://10.0.0.5/push" },
        })
      ).error?.code,
    ).toBe(-32602);
    expect((await rpc(t.baseUrl, "tasks/pushNotificationConfig/list", { id: taskId })).result).toEqual([]);
  });

  it("the conformance seam POST /v1/host/sample/a2a/tasks/push-config refuses both legs with a 4xx naming the arm, even for an unknown task", async () => {
    const t = await pushApp({ PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "false" });
    for (const { url, arm } of conformanceLegs) {
      const res = await fetch(`${t.baseUrl}/v1/host/sample/a2a/tasks/push-config`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ taskId: `unknown-${randomUUID()}`, url }),
      });
      expect(res.status, url).toBe(400);
      const body = (await res.json()) as { error: string; message: string; details?: Record<string, unknown> };
      expect(body.details?.["arm"], url).toBe(arm);
    }
    // A safe URL on a real task is stored and shows in the A2ATaskState read (url only).
    const taskId = await startTask(t.baseUrl);
    const ok = await fetch(`${t.baseUrl}/v1/host/sample/a2a/tasks/push-config`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ taskId, url: "https://93.184.215.14/push", token: "seam-token" }),
    });
    expect(ok.status).toBe(201);
    const state = (await (await fetch(`${t.baseUrl}/v1/host/sample/a2a/tasks/${taskId}`)).json()) as Record<
      string,
      any
    >;
    expect(state["pushConfig"]).toEqual({
      url: "https://93.184.215.14/push",
      tokenFingerprint: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
  });

  it("with the test-only loopback allowance, http to a public name is still refused by the scheme arm", async () => {
    const resolver: Resolver = async () => [{ address: "93.184.215.14", family: 4 }];
    const t = await pushApp({}, { resolver });
    const set = await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
      taskId: "unknown",
      pushNotificationConfig: { url: "http://push.example.com/push" },
    });
    expect(set.error?.data?.["arm"]).toBe("scheme");
    const address = await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
      taskId: "unknown",
      pushNotificationConfig: { url: "https://10.0.0.5/push" },
    });
    expect(address.error?.data?.["arm"]).toBe("address");
    // A valid URL passes the guard, then the unknown task is reported.
    expect(
      (
        await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
          taskId: "unknown",
          pushNotificationConfig: { url: "https://push.example.com/push" },
        })
      ).error?.code,
    ).toBe(-32001);
  });
});

describe("push disabled by configuration", () => {
  it("answers -32003 on every push method and on an inline config; the card and discovery say pushNotifications: false", async () => {
    const t = await pushApp({ PUSH_ENABLED: "false" });
    const taskId = await startTask(t.baseUrl);
    const calls: Array<[string, unknown]> = [
      ["tasks/pushNotificationConfig/set", { taskId, pushNotificationConfig: { url: "https://hooks.example.com/x" } }],
      ["tasks/pushNotificationConfig/get", { id: taskId }],
      ["tasks/pushNotificationConfig/list", { id: taskId }],
      ["tasks/pushNotificationConfig/delete", { id: taskId, pushNotificationConfigId: taskId }],
      [
        "message/send",
        { message: message("x"), configuration: { pushNotificationConfig: { url: "https://hooks.example.com/x" } } },
      ],
    ];
    for (const [method, params] of calls) {
      const answer = await rpc(t.baseUrl, method, params);
      expect(answer.error?.code, method).toBe(-32003);
      expect(answer.error?.message.toLowerCase(), method).toContain("push notification is not supported");
    }
    const card = (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as Record<string, any>;
    expect(card["capabilities"].pushNotifications).toBe(false);
    const discovery = (await (await fetch(`${t.baseUrl}/.well-known/openwop`)).json()) as Record<string, any>;
    expect(discovery["a2a"].pushNotifications).toBe(false);
    expect((await fetch(`${t.baseUrl}/v1/push/dead-letters`)).status).toBe(501);
  });

  it("enabled: the card and discovery say pushNotifications: true", async () => {
    const t = await pushApp();
    const card = (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as Record<string, any>;
    expect(card["capabilities"].pushNotifications).toBe(true);
    const discovery = (await (await fetch(`${t.baseUrl}/.well-known/openwop`)).json()) as Record<string, any>;
    expect(discovery["a2a"].pushNotifications).toBe(true);
  });
});

describe("tenants", () => {
  const keys = [
    {
      id: "alice",
      tenant: "tenant-a",
      scopes: ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage"],
      key: "alice-key-0123456789abcdef",
    },
    {
      id: "bob",
      tenant: "tenant-b",
      scopes: ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage"],
      key: "bob-key-0123456789abcdef00",
    },
  ];
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  it("get / list / set / delete from another tenant answer task not found, and nothing leaks", async () => {
    const hook = await receiver();
    const t = await pushApp({ API_KEYS: JSON.stringify(keys) });
    const sent = await rpc(
      t.baseUrl,
      "message/send",
      {
        message: message("x"),
        configuration: { pushNotificationConfig: { url: hook.url(), token: "alice-secret-token" } },
      },
      as(keys[0]!.key),
    );
    const taskId = sent.result.id as string;
    const own = await rpc(t.baseUrl, "tasks/pushNotificationConfig/get", { id: taskId }, as(keys[0]!.key));
    expect(own.result.pushNotificationConfig.url).toBe(hook.url());
    expect(JSON.stringify(own)).not.toContain("alice-secret-token");
    for (const [method, params] of [
      ["tasks/pushNotificationConfig/get", { id: taskId }],
      ["tasks/pushNotificationConfig/list", { id: taskId }],
      ["tasks/pushNotificationConfig/set", { taskId, pushNotificationConfig: { url: hook.url("/bob") } }],
      ["tasks/pushNotificationConfig/delete", { id: taskId, pushNotificationConfigId: taskId }],
    ] as const) {
      const answer = await rpc(t.baseUrl, method, params, as(keys[1]!.key));
      expect(answer.error?.code, method).toBe(-32001);
      expect(JSON.stringify(answer)).not.toContain("alice-secret-token");
    }
    expect(
      (await rpc(t.baseUrl, "tasks/pushNotificationConfig/list", { id: taskId }, as(keys[0]!.key))).result,
    ).toHaveLength(1);
    const bobLetters = (await (
      await fetch(`${t.baseUrl}/v1/push/dead-letters`, { headers: as(keys[1]!.key) })
    ).json()) as { deadLetters: unknown[] };
    expect(bobLetters.deadLetters).toEqual([]);
  });

  it("dead letters of another tenant's task answer not found, exactly like an unknown task; the owner reads its (empty) list", async () => {
    const t = await pushApp({ API_KEYS: JSON.stringify(keys) });
    const sent = await rpc(t.baseUrl, "message/send", { message: message("x") }, as(keys[0]!.key));
    const taskId = sent.result.id as string;
    const letters = async (id: string, key: string) => {
      const res = await fetch(`${t.baseUrl}/v1/push/dead-letters?taskId=${encodeURIComponent(id)}`, {
        headers: as(key),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    expect(await letters(taskId, keys[0]!.key)).toEqual({ status: 200, body: { deadLetters: [] } });
    const otherTenant = await letters(taskId, keys[1]!.key);
    const unknownId = randomUUID();
    const unknown = await letters(unknownId, keys[1]!.key);
    expect(otherTenant.status).toBe(404);
    expect(otherTenant.body["error"]).toBe("not_found");
    expect(unknown.status).toBe(404);
    expect(JSON.stringify(otherTenant.body).replaceAll(taskId, "ID")).toBe(
      JSON.stringify(unknown.body).replaceAll(unknownId, "ID"),
    );
  });
});

describe("secrets at rest (MongoDB)", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `push_secrets_${randomUUID().slice(0, 8)}`;
  let client: MongoClient;
  beforeAll(async () => {
    client = await MongoClient.connect(mongoUri);
  });
  afterAll(async () => {
    await client.db(dbName).dropDatabase();
    await client.close();
  });

  it("token and credentials are encrypted in the pushConfigs document and appear nowhere else: task document, events, A2ATaskState, logs", async () => {
    const hook = await receiver();
    const logs: string[] = [];
    const db = client.db(dbName);
    const store = new MongoTaskStore(client, db);
    await store.init();
    const pushConfigs = new MongoPushConfigStore(db);
    await pushConfigs.init();
    const t = await startPushApp({}, { store, pushConfigs, logs });
    let closed = false;
    cleanups.push(async () => {
      if (!closed) await t.close();
    });
    const token = `tok-${randomBytes(12).toString("hex")}`;
    const credentials = `cred-${randomBytes(12).toString("hex")}`;
    const taskId = await startTask(t.baseUrl, {
      url: hook.url(),
      token,
      authentication: { schemes: ["Bearer"], credentials },
    });
    await rpc(t.baseUrl, "tasks/pushNotificationConfig/set", {
      taskId,
      pushNotificationConfig: {
        id: "second",
        url: hook.url("/2"),
        token,
        authentication: { schemes: ["Basic"], credentials },
      },
    });
    await waitFor(() => hook.forTask(taskId).length >= 1, 10_000, "the first push");
    expect(hook.forTask(taskId)[0]!.headers["x-a2a-notification-token"]).toBe(token);
    expect((await rpc(t.baseUrl, "message/send", { message: accept(taskId) })).result.status.state).toBe("completed");
    await waitFor(
      () => hook.hits.filter((h) => h.json["status"]?.state === "completed").length >= 2,
      10_000,
      "both completed pushes",
    );

    const raw = await db.collection("pushConfigs").find({ taskId }).toArray();
    expect(raw).toHaveLength(2);
    for (const doc of raw) {
      const text = JSON.stringify(doc);
      expect(text).not.toContain(token);
      expect(text).not.toContain(credentials);
      expect(doc["sealed"]).toMatchObject({
        v: 1,
        kid: expect.any(String),
        iv: expect.any(String),
        tag: expect.any(String),
        data: expect.any(String),
      });
      expect(doc["tokenFingerprint"]).toMatch(/^[0-9a-f]{32}$/);
    }
    const taskDoc = JSON.stringify(await db.collection("tasks").findOne({ _id: taskId as never }));
    expect(taskDoc).not.toContain(token);
    expect(taskDoc).not.toContain(credentials);
    const events = JSON.stringify(await store.readEvents(taskId, 0));
    expect(events).not.toContain(token);
    const state = JSON.stringify(await (await fetch(`${t.baseUrl}/v1/a2a/tasks/${taskId}`)).json());
    expect(state).not.toContain(token);
    expect(state).toContain("tokenFingerprint");
    closed = true;
    await t.close();
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join("\n")).not.toContain(token);
    expect(logs.join("\n")).not.toContain(credentials);
    // Debug output names the pushes without their secrets.
    expect(logs.join("\n")).toContain("push: attempt");
  });
});
