import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateA2ATaskState } from "../../src/schemas/schema-validator.js";
import { expectErrorEnvelope, openwopClient, testTokenKeys } from "../support/openwop-client.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const SEAMS = "/v1/host/sample/a2a/tasks";

describe("host-sample conformance seams", () => {
  let t: TestApp;
  let api: ReturnType<typeof openwopClient>;
  beforeAll(async () => {
    t = await startTestApp({
      INTERRUPT_TOKEN_KEYS: testTokenKeys(),
      DATA_DIR: await mkdtemp(join(tmpdir(), "openwop-seams-")),
    });
    api = openwopClient(t.baseUrl);
  });
  afterAll(() => t.close());

  it("tasks/start paused-at-approval answers {taskId} of a real run waiting at its gate; the seam reads its A2ATaskState", async () => {
    const started = await api.call("POST", `${SEAMS}/start`, { scenario: "paused-at-approval" });
    expect(started.status).toBe(201);
    const { taskId } = started.body;
    expect(taskId).toEqual(expect.any(String));
    const state = await api.call("GET", `${SEAMS}/${taskId}`);
    expect(state.status).toBe(200);
    validateA2ATaskState(state.body);
    expect(state.body).toMatchObject({ taskId, runId: taskId, state: "input-required", interruptKind: "approval" });
    // A real run of the fixture: the runs API sees it at node `gate`, and resolving it completes it.
    const run = await api.call("GET", `/v1/runs/${taskId}`);
    expect(run.body).toMatchObject({
      workflowId: "conformance-approval",
      status: "waiting-approval",
      currentNodeId: "gate",
    });
    expect(
      (await api.call("POST", `/v1/runs/${taskId}/interrupts/gate`, { resumeValue: { action: "accept" } })).status,
    ).toBe(200);
    await api.waitForRun(taskId, (s) => s.status === "completed");
    expect((await api.call("GET", `${SEAMS}/${taskId}`)).body).toMatchObject({
      taskId,
      runId: taskId,
      state: "completed",
    });
  });

  it("refuses unknown scenarios and unknown tasks with the error envelope", async () => {
    const bad = await api.call("POST", `${SEAMS}/start`, { scenario: "dancing" });
    expect(bad.status).toBe(400);
    expectErrorEnvelope(bad.body, "validation_error");
    expect(bad.body.message).toContain("paused-at-approval");
    const missing = await api.call("GET", `${SEAMS}/${randomUUID()}`);
    expect(missing.status).toBe(404);
    expectErrorEnvelope(missing.body, "not_found");
  });

  it("push-config refuses both SSRF arms with a 4xx naming the arm, for unknown and known tasks alike", async () => {
    const known = (await api.call("POST", `${SEAMS}/start`, { scenario: "paused-at-approval" })).body.taskId as string;
    for (const taskId of [randomUUID(), known]) {
      for (const [url, arm] of [
        ["https://10.0.0.5/push", "address"],
        ["http://push.example.com/push", "scheme"],
      ] as const) {
        const res = await api.call("POST", `${SEAMS}/push-config`, { taskId, url });
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expectErrorEnvelope(res.body, "validation_error");
        expect(res.body.message).toContain(`${arm} arm`);
        expect(res.body.details).toMatchObject({ arm });
      }
    }
    // A safe URL for a task that does not exist: now it is the task that is missing.
    const unknown = await api.call("POST", `${SEAMS}/push-config`, {
      taskId: randomUUID(),
      url: "https://93.184.215.14/push",
    });
    expect(unknown.status).toBe(404);
    expectErrorEnvelope(unknown.body, "not_found");
    const noUrl = await api.call("POST", `${SEAMS}/push-config`, { taskId: known });
    expect(noUrl.status).toBe(400);
  });
});

describe("host-sample push-config registers through the A2A push service", () => {
  let t: TestApp;
  let receiver: Server;
  let port: number;
  beforeAll(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    port = (receiver.address() as AddressInfo).port;
    t = await startTestApp({
      PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
      INTERRUPT_TOKEN_KEYS: testTokenKeys(),
      DATA_DIR: await mkdtemp(join(tmpdir(), "openwop-seams-push-")),
    });
  });
  afterAll(async () => {
    await t.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  it("a valid URL is registered and shows in the persisted A2ATaskState", async () => {
    const api = openwopClient(t.baseUrl);
    const taskId = (await api.call("POST", `${SEAMS}/start`, { scenario: "paused-at-approval" })).body.taskId as string;
    const url = `http://127.0.0.1:${port}/push`;
    const res = await api.call("POST", `${SEAMS}/push-config`, { taskId, url });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ taskId, pushNotificationConfig: { url } });
    const state = await api.call("GET", `${SEAMS}/${taskId}`);
    validateA2ATaskState(state.body);
    expect(state.body.pushConfig).toMatchObject({ url });
  });
});

describe("conformance seams switched off", () => {
  it("CONFORMANCE_SEAMS=false: every seam is 404", async () => {
    const t = await startTestApp({
      CONFORMANCE_SEAMS: "false",
      INTERRUPT_TOKEN_KEYS: testTokenKeys(),
      DATA_DIR: await mkdtemp(join(tmpdir(), "openwop-seams-off-")),
    });
    try {
      const api = openwopClient(t.baseUrl);
      const start = await api.call("POST", `${SEAMS}/start`, { scenario: "paused-at-approval" });
      const get = await api.call("GET", `${SEAMS}/${randomUUID()}`);
      const push = await api.call("POST", `${SEAMS}/push-config`, {
        taskId: randomUUID(),
        url: "https://10.0.0.5/push",
      });
      expect([start.status, get.status, push.status]).toEqual([404, 404, 404]);
      expectErrorEnvelope(start.body, "not_found");
      // The runs API is not a seam: it stays.
      expect((await api.call("POST", "/v1/runs", { workflowId: "conformance-noop" })).status).toBe(201);
    } finally {
      await t.close();
    }
  });
});
