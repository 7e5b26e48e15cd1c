// The `http` node against a real HTTP service: a node:http server on loopback (allowed by the test-only
// HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS), scripted by the run's input text. Our host is driven the way a caller
// would: v0.3 JSON-RPC `message/send` on /a2a/jsonrpc, workflows from test/fixtures/http-workflows. Checked: the
// request body and headers (Idempotency-Key, a credential from WORKFLOW_VARIABLES), output and artifacts on the
// task, retries on 503 and on 429 with Retry-After, a 400 failing with http_client_error and the service's
// message, a timeout, malformed answers, the egress guard refusing loopback without the test setting (nothing
// half-written), secrets kept out of the task record, and definitions refused at load.
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkflowLoadError } from "../../src/engine/workflow-load-error.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { jsonRpcCaller, type WireTask } from "../support/jsonrpc-caller.js";
import { testSigningKeys, testTokenKeys } from "../support/openwop-client.js";

const FIXTURES = new URL("../fixtures/http-workflows", import.meta.url).pathname;
const TOKEN = "s3cr3t-token-value";

interface Received {
  at: number;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Record<string, any>;
  /** What the host's store held for the task when the request arrived (see `peek`). */
  committed?: string[];
}

/** The service: answers by the scenario in the run's input text; remembers every request. */
async function startService(
  peek?: (taskId: string) => Promise<string[]>,
): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const body = text ? (JSON.parse(text) as Record<string, any>) : {};
      const at = Date.now();
      const committed = peek ? await peek(String(body["taskId"])) : undefined;
      received.push({
        at,
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body,
        ...(committed ? { committed } : {}),
      });
      const scenario = String(body["input"]?.["text"] ?? "").split(" ")[0];
      const tries = received.filter((r) => r.body["idempotencyKey"] === body["idempotencyKey"]).length;
      const json = (status: number, value: unknown, headers: Record<string, string> = {}) =>
        res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(value));
      switch (scenario) {
        case "ok":
          return json(200, {
            output: { answer: 42, sawParams: body["params"] },
            artifacts: [
              {
                artifactId: "report",
                name: "report",
                description: "From Python",
                parts: [{ kind: "text", text: "the report" }],
              },
              { name: "numbers", parts: [{ kind: "data", data: { total: 3 } }] },
            ],
          });
        case "flaky":
          return tries === 1 ? json(503, { error: "warming up" }) : json(200, { output: { tries } });
        case "busy":
          return tries === 1
            ? json(429, { error: "slow down" }, { "retry-after": "1" })
            : json(200, { output: { tries } });
        case "down":
          return json(503, { error: "down for good" });
        case "bad":
          return json(400, { error: { message: `field "amount" is required (you sent token ${TOKEN})` } });
        case "hold":
          // The first request of a key is never answered (the host is stopped meanwhile); later ones succeed.
          if (tries === 1) return;
          return json(200, { output: { tries, attempt: body["attempt"] } });
        case "slow":
          setTimeout(() => json(200, { output: "too late" }), 3_000).unref();
          return;
        case "garbage":
          return res.writeHead(200, { "content-type": "text/plain" }).end("<html>not json</html>");
        case "shape":
          return json(200, { result: 1, artifacts: [{ name: "x", parts: [{ kind: "video" }] }] });
        case "bad-part":
          return json(200, { artifacts: [{ name: "x", parts: [{ kind: "video" }] }] });
        default:
          return json(200, {});
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const openwop = (task: WireTask): Record<string, any> => task["metadata"]["openwop"];

const FAST = {
  HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS: "true",
  HTTP_NODE_RETRY_BASE_MS: "20",
  HTTP_NODE_RETRY_MAX_MS: "2000",
  BLOCKING_TIMEOUT_MS: "10000",
  WORKFLOW_VARIABLES: "HTTP_SERVICE_URL, HTTP_SERVICE_TOKEN",
  HTTP_SERVICE_TOKEN: TOKEN,
};

describe("http node against a real HTTP service on loopback", () => {
  let service: Awaited<ReturnType<typeof startService>>;
  let t: TestApp;
  const store = new MemoryTaskStore();
  const caller = jsonRpcCaller(() => t.baseUrl);
  const requestsOf = (taskId: string) => service.received.filter((r) => r.body["taskId"] === taskId);
  const outputsOf = async (taskId: string) =>
    ((await store.get(taskId))?.snapshot as { context: { outputs: Record<string, unknown> } }).context.outputs;

  beforeAll(async () => {
    service = await startService(async (taskId) =>
      (await store.readEvents(taskId, 0)).map((e) => `${e.type}${e.nodeId ? `:${e.nodeId}` : ""}`),
    );
    t = await startTestApp({ WORKFLOWS_DIR: FIXTURES, HTTP_SERVICE_URL: service.url, ...FAST }, store);
  });
  afterAll(async () => {
    await t?.close();
    await service?.close();
  });

  it("posts the run's state with the idempotency key, and the answer's output and artifacts land on the task", async () => {
    const task = await caller.start("ok please", "http-call", { data: { amount: 7 } });
    expect(task["status"].state).toBe("completed");
    const [request, ...more] = requestsOf(task["id"]);
    expect(more).toHaveLength(0);
    const key = `${task["id"]}:call:1`;
    expect(request!.method).toBe("POST");
    expect(request!.url).toBe(`/work?token=${TOKEN}`);
    expect(request!.headers["idempotency-key"]).toBe(key);
    expect(request!.headers["authorization"]).toBe(`Bearer ${TOKEN}`);
    expect(request!.headers["x-team"]).toBe("billing");
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(request!.body).toMatchObject({
      taskId: task["id"],
      runId: task["id"],
      contextId: task["contextId"],
      workflowId: "http-call",
      nodeId: "call",
      attempt: 1,
      idempotencyKey: key,
      input: {
        text: "ok please",
        data: { amount: 7 },
        parts: [
          { kind: "text", text: "ok please" },
          { kind: "data", data: { amount: 7 } },
        ],
      },
      message: {
        parts: [
          { kind: "text", text: "ok please" },
          { kind: "data", data: { amount: 7 } },
        ],
      },
      params: { tone: "formal" },
      outputs: { first: { text: "ok please" } },
      feedback: [],
    });
    const ids = task["artifacts"].map((a: any) => a.artifactId);
    expect(ids).toContain("report");
    expect(ids).toContain("call.1");
    const report = task["artifacts"].find((a: any) => a.artifactId === "report");
    expect(report).toMatchObject({
      name: "report",
      description: "From Python",
      parts: [{ kind: "text", text: "the report" }],
    });
    expect(task["artifacts"].find((a: any) => a.artifactId === "call.1").parts).toEqual([
      { kind: "data", data: { total: 3 } },
    ]);

    // The output is on the run; `next: last` skipped the node in between.
    const log = await store.readEvents(task["id"], 0);
    expect((await outputsOf(task["id"]))["call"]).toEqual({ answer: 42, sawParams: { tone: "formal" } });
    expect(log.some((e) => e.nodeId === "skipped")).toBe(false);
    expect(log.some((e) => e.type === "node.completed" && e.nodeId === "last")).toBe(true);
    // node.started of the call was committed before the call (and nothing after it).
    expect(request!.committed?.at(-1)).toBe("node.started:call");
    // The credential is in no stored record.
    expect(JSON.stringify(await store.get(task["id"]))).not.toContain(TOKEN);
    expect(JSON.stringify(log)).not.toContain(TOKEN);
  });

  it("503 then 200: retried with the same idempotency key, and succeeds", async () => {
    const task = await caller.start("flaky", "http-call");
    expect(task["status"].state).toBe("completed");
    const requests = requestsOf(task["id"]);
    expect(requests).toHaveLength(2);
    expect(new Set(requests.map((r) => r.headers["idempotency-key"]))).toEqual(new Set([`${task["id"]}:call:1`]));
    expect((await outputsOf(task["id"]))["call"]).toEqual({ tries: 2 });
  });

  it("429 with Retry-After: waits as asked, then succeeds", async () => {
    const task = await caller.start("busy", "http-call");
    expect(task["status"].state).toBe("completed");
    const requests = requestsOf(task["id"]);
    expect(requests).toHaveLength(2);
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(900);
  });

  it("503 on every attempt: fails with http_retries_exhausted after retry.maxAttempts", async () => {
    const task = await caller.start("down", "http-call");
    expect(task["status"].state).toBe("failed");
    expect(requestsOf(task["id"])).toHaveLength(3);
    expect(openwop(task)["error"]).toMatchObject({ code: "http_retries_exhausted" });
    expect(openwop(task)["error"].message).toBe(
      `gave up after 3 attempts: ${service.url} answered HTTP 503: down for good`,
    );
  });

  it("400: fails at once with http_client_error, the status and the service's message (secrets redacted)", async () => {
    const task = await caller.start("bad", "http-call");
    expect(task["status"].state).toBe("failed");
    expect(requestsOf(task["id"])).toHaveLength(1);
    const error = openwop(task)["error"];
    expect(error).toMatchObject({ code: "http_client_error" });
    expect(error.message).toBe(
      `${service.url} answered HTTP 400: field "amount" is required (you sent token [redacted])`,
    );
    expect(JSON.stringify(await store.get(task["id"]))).not.toContain(TOKEN);
    const log = await store.readEvents(task["id"], 0);
    expect(log.some((e) => e.type === "node.completed" && e.nodeId === "call")).toBe(false);
  });

  it("a service slower than the node's timeoutMs: each attempt times out, then http_retries_exhausted", async () => {
    const task = await caller.start("slow", "http-call");
    expect(task["status"].state).toBe("failed");
    expect(requestsOf(task["id"])).toHaveLength(3);
    expect(openwop(task)["error"]).toMatchObject({ code: "http_retries_exhausted" });
    expect(openwop(task)["error"].message).toBe(
      `gave up after 3 attempts: ${service.url} did not answer within 1500 ms`,
    );
  }, 20_000);

  it("malformed answers fail with http_bad_response and say what is wrong", async () => {
    const garbage = await caller.start("garbage", "http-once");
    expect(openwop(garbage)["error"]).toMatchObject({ code: "http_bad_response" });
    expect(openwop(garbage)["error"].message).toBe(`${service.url} answered a malformed result: the body is not JSON`);

    const shape = await caller.start("shape", "http-once");
    expect(openwop(shape)["error"].message).toContain(`unknown field "result" (expected output, artifacts)`);

    const part = await caller.start("bad-part", "http-once");
    expect(openwop(part)["error"].message).toContain(`artifacts[0].parts[0].kind must be "text", "data" or "file"`);
  });

  it("a cancel aborts the call in flight: the run is canceled and its result never lands", async () => {
    const task = await caller.start("hold", "http-once", { blocking: false });
    for (const deadline = Date.now() + 10_000; requestsOf(task["id"]).length < 1;) {
      if (Date.now() > deadline) throw new Error("the service got no request");
      await new Promise((r) => setTimeout(r, 20));
    }
    const canceled = await caller.cancel(task["id"]);
    expect(canceled["status"].state).toBe("canceled");
    await new Promise((r) => setTimeout(r, 200));
    expect(requestsOf(task["id"])).toHaveLength(1);
    const log = await store.readEvents(task["id"], 0);
    expect(log.some((e) => e.type === "node.completed" || e.type === "node.failed")).toBe(false);
  });

  it("the definition served to callers keeps ${NAME} references, never the values", async () => {
    const res = await fetch(`${t.baseUrl}/v1/workflows/http-call`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain("${HTTP_SERVICE_TOKEN}");
    expect(text).not.toContain(TOKEN);
  });
});

describe("http node timeouts", () => {
  let service: Awaited<ReturnType<typeof startService>>;
  let t: TestApp;
  const caller = jsonRpcCaller(() => t.baseUrl);

  beforeAll(async () => {
    service = await startService();
    t = await startTestApp({
      WORKFLOWS_DIR: FIXTURES,
      HTTP_SERVICE_URL: service.url,
      ...FAST,
      HTTP_NODE_TIMEOUT_MS: "300",
    });
  });
  afterAll(async () => {
    await t?.close();
    await service?.close();
  });

  it("HTTP_NODE_TIMEOUT_MS bounds each request of a node without timeoutMs", async () => {
    const started = Date.now();
    const task = await caller.start("slow", "http-once");
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(task["status"].state).toBe("failed");
    expect(openwop(task)["error"]).toMatchObject({ code: "http_retries_exhausted" });
    expect(openwop(task)["error"].message).toBe(`gave up after 1 attempt: ${service.url} did not answer within 300 ms`);
  });
});

describe("http node egress guard", () => {
  let service: Awaited<ReturnType<typeof startService>>;

  beforeAll(async () => {
    service = await startService();
  });
  afterAll(async () => {
    await service?.close();
  });

  // Issue 40: the guard's verdict on a URL it can judge without DNS comes at the start, not when a task reaches the node.
  it("refuses to start with a loopback service and no test-only setting, naming HTTP_NODE_PRIVATE_HOSTS; nothing is called", async () => {
    const { HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS: _allowed, ...withoutAllowance } = FAST;
    const failure = await startTestApp({
      WORKFLOWS_DIR: FIXTURES,
      HTTP_SERVICE_URL: service.url,
      ...withoutAllowance,
    }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(WorkflowLoadError);
    const problem = (failure as WorkflowLoadError).problems.find((p) => p.includes('node "call"'));
    expect(problem).toBe(
      `${join(FIXTURES, "http-call.yaml")}: workflow "http-call", node "call": its url will be refused when it runs: http is not allowed for http://127.0.0.1:${new URL(service.url).port}; http node URLs must use https; to reach a private service, list it as host:port in HTTP_NODE_PRIVATE_HOSTS`,
    );
    expect(problem).not.toContain(TOKEN);
    expect(service.received).toHaveLength(0);
  });
});

describe("http node definitions are checked at load", () => {
  async function loadError(yaml: string, env: Record<string, string> = {}): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), "http-node-"));
    const file = join(dir, "bad.yaml");
    await writeFile(file, `id: bad\nname: Bad\ndescription: A broken http node.\nnodes:\n${yaml}`);
    try {
      const t = await startTestApp({ WORKFLOWS_DIR: dir, ...env });
      await t.close();
    } catch (err) {
      const message = (err as Error).message;
      expect(message).toContain(file);
      return message;
    }
    throw new Error("the definition loaded");
  }

  it("refuses a missing url, a non-http url, an unknown variable and a header the host owns, naming the file and the reason", async () => {
    expect(await loadError("  - { kind: http, id: call }\n")).toMatch(/nodes\/0: must have required property 'url'/);
    expect(await loadError('  - { kind: http, id: call, url: "ftp://files.example.com/x" }\n')).toContain(
      'node "call": url must be an absolute http(s) URL (got "ftp://files.example.com/x")',
    );
    expect(await loadError('  - { kind: http, id: call, url: "/relative" }\n')).toContain(
      'node "call": url must be an absolute http(s) URL',
    );
    expect(await loadError('  - { kind: http, id: call, url: "https://${NOT_LISTED}/x" }\n')).toContain(
      'node "call": url refers to ${NOT_LISTED}, which is not a variable workflows may use',
    );
    expect(
      await loadError(
        '  - { kind: http, id: call, url: "https://svc.example.com/x", headers: { Authorization: "${API_KEY}" } }\n',
        { WORKFLOW_VARIABLES: "OTHER" },
      ),
    ).toContain(
      'node "call": header "Authorization" refers to ${API_KEY}, which is not a variable workflows may use (add API_KEY to WORKFLOW_VARIABLES; known: A2A_PEER_CARD_URL, OTHER)',
    );
    expect(
      await loadError(
        '  - { kind: http, id: call, url: "https://svc.example.com/x", headers: { Idempotency-Key: "k" } }\n',
      ),
    ).toContain('header "Idempotency-Key" is set by the host');
    expect(await loadError('  - { kind: http, id: call, url: "https://svc.example.com/x", method: GET }\n')).toMatch(
      /nodes\/0\/method: must be equal to one of the allowed values/,
    );
  });
});

describe("http node across a restart (at-least-once, the same idempotency key)", () => {
  let service: Awaited<ReturnType<typeof startService>>;
  let t: TestApp;
  const store = new MemoryTaskStore();
  const caller = jsonRpcCaller(() => t.baseUrl);
  let env: Record<string, string>;

  beforeAll(async () => {
    service = await startService();
    env = { WORKFLOWS_DIR: FIXTURES, HTTP_SERVICE_URL: service.url, ...FAST };
    t = await startTestApp(env, store);
  });
  afterAll(async () => {
    await t?.close();
    await service?.close();
  });

  it("a host stopped during the call runs the node again after its restart, with the same Idempotency-Key", async () => {
    const task = await caller.start("hold", "http-once", { blocking: false });
    const requestsOf = () => service.received.filter((r) => r.body["taskId"] === task["id"]);
    for (const deadline = Date.now() + 10_000; requestsOf().length < 1;) {
      if (Date.now() > deadline) throw new Error("the service got no request");
      await new Promise((r) => setTimeout(r, 20));
    }
    await t.close();
    t = await startTestApp(env, store);
    let done: WireTask | undefined;
    for (const deadline = Date.now() + 10_000; ;) {
      done = await caller.get(task["id"]);
      if (done["status"].state === "completed") break;
      if (Date.now() > deadline) throw new Error(`the task did not complete: ${JSON.stringify(done["status"])}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const [first, second, ...more] = requestsOf();
    expect(more).toHaveLength(0);
    expect(first!.headers["idempotency-key"]).toBe(`${task["id"]}:call:1`);
    expect(second!.headers["idempotency-key"]).toBe(first!.headers["idempotency-key"]);
    expect(second!.body["idempotencyKey"]).toBe(first!.body["idempotencyKey"]);
    expect(second!.body["attempt"]).toBeGreaterThan(first!.body["attempt"]);
  }, 30_000);
});

// Production: the test-only loopback allowance is refused there, so a service on the private network (here a
// sidecar on loopback, reached over plain http) is reachable only when HTTP_NODE_PRIVATE_HOSTS lists it.
describe("http node private services in NODE_ENV=production (HTTP_NODE_PRIVATE_HOSTS)", () => {
  const KEY = "private-hosts-test-key-0123456789";
  let service: Awaited<ReturnType<typeof startService>>;
  let port: number;
  const caller = jsonRpcCaller(() => t.baseUrl, { key: KEY });
  let t: TestApp;

  beforeAll(async () => {
    service = await startService();
    port = Number(new URL(service.url).port);
  });
  afterAll(async () => {
    await service?.close();
  });

  async function startProduction(env: Record<string, string>): Promise<TestApp> {
    const { HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS: _allowed, ...fast } = FAST;
    t = await startTestApp({
      NODE_ENV: "production",
      API_KEYS: JSON.stringify([{ id: "ops", tenant: "default", scopes: ["runs:create", "runs:read"], key: KEY }]),
      MONGODB_URI: "mongodb://127.0.0.1:1/unused-the-test-passes-its-store",
      INTERRUPT_TOKEN_KEYS: testTokenKeys(),
      SIGNING_KEYS: testSigningKeys(),
      PUSH_ENABLED: "false",
      A2A_PEER_PUSH: "false",
      WORKFLOWS_DIR: FIXTURES,
      HTTP_SERVICE_URL: service.url,
      ...fast,
      ...env,
    });
    return t;
  }

  it("a listed sidecar (host:port) is reached over plain http", async () => {
    const app = await startProduction({ HTTP_NODE_PRIVATE_HOSTS: `127.0.0.1:${port}` });
    try {
      expect(app.config.env).toBe("production");
      const task = await caller.start("ok", "http-call");
      expect(task["status"].state).toBe("completed");
      expect(service.received.filter((r) => r.body["taskId"] === task["id"])).toHaveLength(1);
      expect(task["artifacts"].map((a: any) => a.artifactId)).toContain("report");
    } finally {
      await app.close();
    }
  });

  it("a CIDR entry with the port reaches it too", async () => {
    const app = await startProduction({ HTTP_NODE_PRIVATE_HOSTS: `10.0.0.0/8:${port}, 127.0.0.0/8:${port}` });
    try {
      const task = await caller.start("ok", "http-call");
      expect(task["status"].state).toBe("completed");
    } finally {
      await app.close();
    }
  });

  it.each([
    ["not listed", {}],
    [
      "named only by the allow list and allowed ports",
      { HTTP_NODE_ALLOW_HOSTS: "127.0.0.1", HTTP_NODE_ALLOWED_PORTS: "PORT" },
    ],
    ["listed on another port", { HTTP_NODE_PRIVATE_HOSTS: "127.0.0.1:PORT+1" }],
  ])(
    "a sidecar %s stops the start, and the problem names HTTP_NODE_PRIVATE_HOSTS",
    async (_case, raw: Record<string, string>) => {
      const env = Object.fromEntries(
        Object.entries(raw).map(([k, v]) => [k, v.replace("PORT+1", String(port + 1)).replace("PORT", String(port))]),
      );
      const before = service.received.length;
      const failure = await startProduction(env).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(WorkflowLoadError);
      const problem = (failure as WorkflowLoadError).problems.find((p) => p.includes('node "call"'));
      expect(problem).toContain(`its url will be refused when it runs`);
      expect(problem).toContain(`http://127.0.0.1:${port}`);
      expect(problem).toContain("list it as host:port in HTTP_NODE_PRIVATE_HOSTS");
      expect(problem).not.toContain(TOKEN);
      expect(service.received.length).toBe(before);
    },
  );
});
