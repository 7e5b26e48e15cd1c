import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateA2ATaskState, validateCapabilities } from "../../src/schemas/schema-validator.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

describe("discovery and the durable read over REST", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it("GET /.well-known/openwop validates and carries the a2a block at the root", async () => {
    const doc = (await (await fetch(`${t.baseUrl}/.well-known/openwop`)).json()) as Record<string, any>;
    validateCapabilities(doc);
    const card = (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as Record<string, any>;
    expect(doc["a2a"].supported).toBe(true);
    expect(doc["a2a"].agentCardUrl).toBe(`${t.baseUrl}/.well-known/agent-card.json?bare=0.3`);
    expect(doc["a2a"].streaming).toBe(card["capabilities"].streaming);
    expect(doc["a2a"].pushNotifications).toBe(card["capabilities"].pushNotifications);
    expect(doc["a2a"].durableTasks).toBe(false); // this test app runs on the in-memory store
    expect(doc["a2a"].protocolVersions).toContain(doc["a2a"].preferredVersion);
  });

  it("GET /v1/a2a/tasks/{taskId} returns the persisted A2ATaskState", async () => {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
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
    const task = ((await res.json()) as { result: { id: string; contextId: string } }).result;
    const state = (await (await fetch(`${t.baseUrl}/v1/a2a/tasks/${task.id}`)).json()) as Record<string, unknown>;
    validateA2ATaskState(state);
    expect(state).toMatchObject({
      taskId: task.id,
      runId: task.id,
      contextId: task.contextId,
      state: "input-required",
      interruptKind: "approval",
    });
  });

  it("unknown tasks and routes answer the OpenWOP error envelope", async () => {
    const missing = await fetch(`${t.baseUrl}/v1/a2a/tasks/nope`);
    expect(missing.status).toBe(404);
    const body = (await missing.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["details", "error", "message"]);
    expect(body["error"]).toBe("not_found");
    const route = await fetch(`${t.baseUrl}/no/such/route`);
    expect(route.status).toBe(404);
    const wrongMethod = await fetch(`${t.baseUrl}/.well-known/openwop`, { method: "DELETE" });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("GET, HEAD"); // HEAD: issue 12 item 13;
  });

  it("advertises the loaded conformance fixtures, the rest transport and the clarification envelope", async () => {
    const doc = (await (await fetch(`${t.baseUrl}/.well-known/openwop`)).json()) as Record<string, any>;
    validateCapabilities(doc);
    expect(doc["fixtures"]).toEqual(
      expect.arrayContaining([
        "conformance-noop",
        "conformance-approval",
        "conformance-cancellable",
        "conformance-delay",
      ]),
    );
    // Exactly the loaded fixture workflows (conformance-a2a-task-roundtrip too, when it is loaded), each really served.
    const served = (
      (await (await fetch(`${t.baseUrl}/v1/workflows`)).json()) as { workflows: Array<{ workflowId: string }> }
    ).workflows.map((w) => w.workflowId);
    expect([...(doc["fixtures"] as string[])].sort()).toEqual(
      served.filter((id) => id.startsWith("conformance-")).sort(),
    );
    for (const id of doc["fixtures"] as string[])
      expect((await fetch(`${t.baseUrl}/v1/workflows/${id}`)).status).toBe(200);
    expect(doc["supportedTransports"]).toContain("rest");
    expect(doc["supportedEnvelopes"]).toEqual(["clarification.request"]);
    expect(doc["eventLogSchemaVersion"]).toBe(2);
    // OpenWOP RFC 0158: the recovery bound, derived from the lease settings (docs/operating.md "RFC 0158 evidence").
    const [bound] = doc["recoveryEvidence"].recoveryBounds as Array<{
      class: string;
      bound: number;
      terms: Array<{ name: string; ms: number }>;
    }>;
    expect(bound!.class).toBe("task-execution-lease");
    expect(bound!.terms.map((t) => t.name)).toEqual(["leaseTtlMs", "leaseHeartbeatMs"]);
    expect(bound!.bound).toBe(bound!.terms.reduce((sum, t) => sum + t.ms, 0));
    expect(doc["recoveryEvidence"].attemptBound).toEqual({
      maxAttempts: 5,
      maxExecutions: 6,
      setting: "RECOVERY_MAX_ATTEMPTS",
      terminalError: "poison_exhausted",
    });
  });

  it("echoes supported extensions on every binding, not only JSON-RPC", async () => {
    const { OPENWOP_EXTENSION_URI } = await import("../../src/app.js");
    const requested = `https://unknown.example/ext, ${OPENWOP_EXTENSION_URI}`;
    const rest03 = await fetch(`${t.baseUrl}/v1/tasks/nope`, { headers: { "x-a2a-extensions": requested } });
    expect(rest03.headers.get("x-a2a-extensions")).toBe(OPENWOP_EXTENSION_URI);
    const rest10 = await fetch(`${t.baseUrl}/tasks/nope`, {
      headers: { "a2a-extensions": requested, "a2a-version": "1.0" },
    });
    expect(rest10.headers.get("a2a-extensions")).toBe(OPENWOP_EXTENSION_URI);
    const connect = await fetch(`${t.baseUrl}/a2a.v1.A2AService/GetTask`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-a2a-extensions": requested },
      body: JSON.stringify({ name: "tasks/nope" }),
    });
    expect(connect.status).toBe(404);
    expect(connect.headers.get("x-a2a-extensions")).toBe(OPENWOP_EXTENSION_URI);
  });

  it("serves the task machine for the visualizer", async () => {
    const machine = (await (await fetch(`${t.baseUrl}/v1/a2a/task-machine.json`)).json()) as {
      id: string;
      states: Record<string, unknown>;
    };
    expect(machine.id).toBe("task");
    expect(Object.keys(machine.states)).toHaveLength(10);
  });
});
