import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { create, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { MongoClient } from "mongodb";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../src/gen/grpc/health/v1/health_pb.js";
import * as reflectionV1 from "../../src/gen/grpc/reflection/v1/reflection_pb.js";
import * as reflectionV1alpha from "../../src/gen/grpc/reflection/v1alpha/reflection_pb.js";
import { createLogger } from "../../src/observability/logger.js";
import { SCOPES } from "../../src/auth/principal.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import { startMongoWireServer, type MongoWireServer } from "../support/mongo-wire-server/server.js";
import { waitFor } from "../support/push-receiver.js";
import { freePort } from "../support/server-process.js";

interface Started {
  base: string;
  app: App;
  logs: string[];
}

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => undefined);
});

async function start(store: TaskStore = new MemoryTaskStore(), env: Record<string, string> = {}): Promise<Started> {
  const port = await freePort();
  const config = loadConfig({
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: "info",
    TIMER_POLL_MS: "50",
    SHUTDOWN_GRACE_MS: "500",
    READINESS_TIMEOUT_MS: "500",
    BUILTIN_WORKFLOWS: "demo,conformance",
    ...env,
  });
  const logs: string[] = [];
  const logger = createLogger(config.logLevel, { write: (line: string) => void logs.push(line) });
  const app = await createApp({ config, logger, store, durableStore: store.kind === "mongodb" });
  await app.listen();
  cleanups.push(() => app.close());
  return { base: `http://127.0.0.1:${port}`, app, logs };
}

async function send(base: string, text: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/a2a/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
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
          metadata: { skillId: "echo" },
        },
      },
    }),
  });
  return (await res.json()) as { result?: { id: string; status: { state: string } } };
}

/** Prometheus text format: `name{labels} value` lines, comments skipped. */
function parsePrometheus(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  const samples = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!match) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

async function scrape(base: string) {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  return parsePrometheus(await res.text());
}

const sum = (samples: ReturnType<typeof parsePrometheus>, name: string, where: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);

describe("health and readiness", () => {
  it("/healthz is liveness; /readyz and grpc.health.v1 follow the store's ping and draining", async () => {
    let wire: MongoWireServer = await startMongoWireServer({ port: 0, log: () => {} });
    const port = wire.port;
    const client = new MongoClient(wire.uri, { serverSelectionTimeoutMS: 300, heartbeatFrequencyMS: 500 });
    await client.connect();
    cleanups.push(() => client.close());
    const store = new MongoTaskStore(client, client.db(`ops_${randomUUID().slice(0, 8)}`));
    await store.init();
    const { base, app } = await start(store);
    const health = createClient(Health, createGrpcTransport({ baseUrl: base }));

    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: "ok" });
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: "ready", checks: { store: "ok", draining: false } });
    expect((await health.check({ service: "" })).status).toBe(Status.SERVING);
    expect((await health.check({ service: "lf.a2a.v1.A2AService" })).status).toBe(Status.SERVING);
    await expect(health.check({ service: "no.such.Service" })).rejects.toThrow(/unknown service/);

    const watch = new AbortController();
    const seen: Status[] = [];
    const watching = (async () => {
      for await (const update of health.watch({ service: "" }, { signal: watch.signal })) seen.push(update.status);
    })().catch(() => undefined);
    await waitFor(() => seen.length === 1, 5_000, "first Watch answer");

    // MongoDB goes away: not ready, with the reason; liveness is unaffected.
    await wire.close();
    await waitFor(async () => (await fetch(`${base}/readyz`)).status === 503, 10_000, "readyz 503");
    const down = (await (await fetch(`${base}/readyz`)).json()) as { status: string; reason: string };
    expect(down.status).toBe("not-ready");
    expect(down.reason).toMatch(/^store: /);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await health.check({ service: "" })).status).toBe(Status.NOT_SERVING);

    // It comes back on the same port: ready again.
    wire = await startMongoWireServer({ port, log: () => {} });
    cleanups.push(() => wire.close());
    await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, 15_000, "readyz 200 again");
    watch.abort();
    await watching;
    expect(seen[0]).toBe(Status.SERVING);

    // Draining: close() turns readiness off before the listener goes away.
    const closing = app.close();
    const drained = await fetch(`${base}/readyz`)
      .then((r) => r.status)
      .catch(() => "closed");
    await closing;
    expect([503, "closed"]).toContain(drained);
  }, 60_000);
});

describe("/readyz when not ready", () => {
  it("answers 503 with Retry-After, as every other 503 of the host does", async () => {
    const unreachable = Object.assign(new MemoryTaskStore(), {
      ping: () => Promise.reject(new Error("connection refused")),
    });
    const { base } = await start(unreachable);
    const res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(await res.json()).toMatchObject({ status: "not-ready", reason: "store: connection refused" });
  });
});

describe("gRPC server reflection", () => {
  it("lists both A2A services and health, and answers file_containing_symbol with the file and its imports (v1 and v1alpha)", async () => {
    const { base } = await start();
    const transport = createGrpcTransport({ baseUrl: base });
    for (const version of [reflectionV1, reflectionV1alpha] as const) {
      const client = createClient(version.ServerReflection as typeof reflectionV1.ServerReflection, transport);
      async function* requests() {
        yield create(reflectionV1.ServerReflectionRequestSchema, {
          messageRequest: { case: "listServices", value: "" },
        });
        yield create(reflectionV1.ServerReflectionRequestSchema, {
          messageRequest: { case: "fileContainingSymbol", value: "lf.a2a.v1.A2AService" },
        });
        yield create(reflectionV1.ServerReflectionRequestSchema, {
          messageRequest: { case: "fileContainingSymbol", value: "a2a.v1.A2AService.SendMessage" },
        });
        yield create(reflectionV1.ServerReflectionRequestSchema, {
          messageRequest: { case: "fileContainingSymbol", value: "no.such.Symbol" },
        });
      }
      const answers = [];
      for await (const answer of client.serverReflectionInfo(requests())) answers.push(answer.messageResponse);
      expect(answers).toHaveLength(4);
      const [list, v10, v03, missing] = answers;
      expect(list?.case).toBe("listServicesResponse");
      const names = list?.case === "listServicesResponse" ? list.value.service.map((s) => s.name) : [];
      expect(names).toEqual(
        expect.arrayContaining([
          "a2a.v1.A2AService",
          "lf.a2a.v1.A2AService",
          "grpc.health.v1.Health",
          "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection",
        ]),
      );
      for (const [answer, file] of [
        [v10, "lf/a2a/v1/a2a.proto"],
        [v03, "a2a/v1/a2a.proto"],
      ] as const) {
        expect(answer?.case).toBe("fileDescriptorResponse");
        if (answer?.case !== "fileDescriptorResponse") continue;
        const files = answer.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
        expect(files[0]?.name).toBe(file);
        // Every import is in the answer, so a client can build the descriptors without our .proto files.
        const sent = new Set(files.map((f) => f.name));
        for (const f of files) for (const dep of f.dependency) expect(sent.has(dep)).toBe(true);
      }
      expect(missing?.case).toBe("errorResponse");
      if (missing?.case === "errorResponse") expect(missing.value.errorCode).toBe(5);
    }
  });
});

describe("metrics", () => {
  it("/metrics is Prometheus text whose request, transition and store values move with traffic", async () => {
    const { base } = await start();
    const before = await scrape(base);
    const requestsBefore = sum(before, "openwop_requests_total", { binding: "jsonrpc", method: "message/send" });
    const sent = await send(base, "hello");
    expect(sent.result?.status.state).toBe("completed");
    await send(base, "again");
    const after = await scrape(base);
    expect(
      sum(after, "openwop_requests_total", { binding: "jsonrpc", method: "message/send", outcome: "200" }) -
        requestsBefore,
    ).toBe(2);
    expect(
      sum(after, "openwop_request_duration_seconds_count", { binding: "jsonrpc", method: "message/send" }),
    ).toBeGreaterThanOrEqual(2);
    expect(sum(after, "openwop_task_transitions_total", { to: "completed" })).toBe(
      sum(before, "openwop_task_transitions_total", { to: "completed" }) + 2,
    );
    expect(sum(after, "openwop_tasks", { state: "completed" })).toBe(2);
    // A blocking echo task is stored in one write, its create.
    expect(
      sum(after, "openwop_store_duration_seconds_count", { command: "create" }) -
        sum(before, "openwop_store_duration_seconds_count", { command: "create" }),
    ).toBe(2);
    // gRPC calls are labelled with their gRPC status (from the trailers), not the HTTP status.
    const health = createClient(Health, createGrpcTransport({ baseUrl: base }));
    await health.check({ service: "" });
    await expect(health.check({ service: "no.such.Service" })).rejects.toThrow();
    const grpc = await scrape(base);
    expect(
      sum(grpc, "openwop_requests_total", { binding: "grpc", method: "grpc.health.v1.Health/Check", outcome: "OK" }),
    ).toBe(1);
    expect(
      sum(grpc, "openwop_requests_total", {
        binding: "grpc",
        method: "grpc.health.v1.Health/Check",
        outcome: "NOT_FOUND",
      }),
    ).toBe(1);
    // A path that only looks like an RPC is not a method: callers cannot mint label values.
    const made = `made${randomUUID().slice(0, 8)}.Service`;
    await fetch(`${base}/${made}/Call`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    const afterMade = await scrape(base);
    expect(afterMade.some((s) => Object.values(s.labels).some((v) => v.includes(made)))).toBe(false);
    expect(sum(afterMade, "openwop_requests_total", { method: "unmatched", outcome: "404" })).toBeGreaterThanOrEqual(1);
    expect(after.some((s) => s.name === "openwop_actors_live")).toBe(true);
    expect(after.some((s) => s.name === "openwop_subscriber_streams")).toBe(true);
  });
});

describe("logs", () => {
  it("one JSON access line per request and task lifecycle lines; API keys, push tokens and credentials never appear", async () => {
    const apiKey = `key-${randomUUID()}`;
    const pushToken = `push-token-${randomUUID()}`;
    const credentials = `cred-${randomUUID()}`;
    const { base, logs } = await start(new MemoryTaskStore(), {
      API_KEYS: JSON.stringify([{ id: "ops", tenant: "tenant-a", scopes: [...SCOPES], key: apiKey }]),
    });
    const auth = { authorization: `Bearer ${apiKey}` };
    const sent = await send(base, "hello", auth);
    const taskId = sent.result?.id;
    expect(taskId).toBeDefined();
    // A push config with a token and credentials (push is off by default in tests: refused, but logged nowhere).
    await fetch(`${base}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "tasks/pushNotificationConfig/set",
        params: {
          taskId,
          pushNotificationConfig: {
            url: "https://example.com/hook",
            token: pushToken,
            authentication: { schemes: ["Bearer"], credentials },
          },
        },
      }),
    });
    await fetch(`${base}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer wrong-key" },
      body: "{}",
    });
    // A signed interrupt URL carries its credential in the path (here a made-up one: refused, and not logged).
    const interruptToken = `itok-${randomUUID()}`;
    await fetch(`${base}/v1/interrupts/${interruptToken}?x=1`);
    await waitFor(() => logs.filter((l) => l.includes('"access":true')).length >= 4, 5_000, "access lines");
    const lines = logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    const access = lines.filter((l) => l["access"] === true);
    expect(access[0]).toMatchObject({
      binding: "jsonrpc",
      version: "0.3",
      method: "message/send",
      status: 200,
      outcome: "200",
      taskId,
      tenant: "tenant-a",
    });
    expect(typeof access[0]?.["durationMs"]).toBe("number");
    expect(lines.find((l) => l["event"] === "task.created")).toMatchObject({
      taskId,
      tenant: "tenant-a",
      msg: "task created",
    });
    expect(lines.find((l) => l["event"] === "task.finished")).toMatchObject({ taskId, state: "completed" });

    // Interrupted, resumed, finished; and a failure with its reason (no peer configured for the a2a.invoke fixture).
    const rpcCall = async (params: unknown) => {
      const res = await fetch(`${base}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "message/send", params }),
      });
      return ((await res.json()) as { result: { id: string; status: { state: string } } }).result;
    };
    const gated = await rpcCall({
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        parts: [{ kind: "text", text: "report" }],
        metadata: { skillId: "approval-gate" },
      },
    });
    expect(gated.status.state).toBe("input-required");
    const accepted = await rpcCall({
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        taskId: gated.id,
        parts: [{ kind: "data", data: { action: "accept" } }],
      },
    });
    expect(accepted.status.state).toBe("completed");
    const failed = await rpcCall({
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        parts: [{ kind: "text", text: "relay" }],
        metadata: { skillId: "conformance-a2a-task-roundtrip" },
      },
    });
    expect(failed.status.state).toBe("failed");
    await waitFor(() => logs.some((l) => l.includes('"task.failed"')), 5_000, "the failure line");
    const events = logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l["taskId"] === gated.id)
      .map((l) => l["event"])
      .filter(Boolean);
    expect(events).toEqual(["task.created", "task.interrupted", "task.resumed", "task.finished"]);
    const failure = logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l["event"] === "task.failed");
    expect(failure).toMatchObject({ taskId: failed.id, tenant: "tenant-a", msg: "task failed" });
    expect(String(failure?.["reason"])).toMatch(/^external_call_failed: /);

    const all = logs.join("\n");
    for (const secret of [apiKey, pushToken, credentials, interruptToken]) expect(all).not.toContain(secret);
    expect(access.find((l) => String(l["path"]).startsWith("/v1/interrupts/"))).toMatchObject({
      path: "/v1/interrupts/[redacted]",
      method: "GET /v1/interrupts/{token}",
    });
  });
});

describe("start-up errors", () => {
  it("a configuration error is one JSON line with the reason, and the process exits 2", () => {
    const out = spawnSync(
      process.execPath,
      ["--import", "tsx", join(import.meta.dirname, "..", "..", "src", "main.ts")],
      {
        env: { PATH: process.env["PATH"], PORT: "not-a-port", STORE: "memory" },
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    expect(out.status).toBe(2);
    const lines = out.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 60, event: "config.invalid", msg: "configuration error" });
    expect(String(line["reason"])).toContain("PORT");
  }, 70_000);
});
