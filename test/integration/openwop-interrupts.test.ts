import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectErrorEnvelope, openwopClient, testTokenKeys, tokenPayload } from "../support/openwop-client.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const SHORT_GATE = `
id: short-gate
name: Short gate
description: An approval gate with a one-second deadline.
nodes:
  - { kind: approval, id: gate, title: Quick, actions: [accept, reject], timeoutMs: 1000 }
  - { kind: task, id: done, handler: noop }
`;

const LATE_GATE = `
id: late-gate
name: Late gate
description: Waits a moment on a durable timer, then at an approval gate.
nodes:
  - { kind: delay, id: warmup, durationMs: 1500 }
  - { kind: approval, id: gate, title: Later, actions: [accept, reject] }
`;

describe("OpenWOP interrupts", () => {
  let t: TestApp;
  let api: ReturnType<typeof openwopClient>;

  beforeAll(async () => {
    const workflows = await mkdtemp(join(tmpdir(), "openwop-interrupt-workflows-"));
    await writeFile(join(workflows, "short-gate.yaml"), SHORT_GATE);
    await writeFile(join(workflows, "late-gate.yaml"), LATE_GATE);
    t = await startTestApp({
      WORKFLOWS_DIR: workflows,
      INTERRUPT_TOKEN_KEYS: testTokenKeys(),
      DATA_DIR: await mkdtemp(join(tmpdir(), "openwop-interrupts-")),
    });
    api = openwopClient(t.baseUrl);
  });
  afterAll(() => t.close());

  /** A conformance-approval run waiting at `gate`, and its snapshot. */
  const atGate = async (workflowId = "conformance-approval") => {
    const runId = await api.startRun(workflowId, { text: "please approve" });
    const snapshot = await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    return { runId, snapshot, interrupt: snapshot.interrupts[0] };
  };
  const eventsOf = async (runId: string) =>
    (await api.call("GET", `/v1/runs/${runId}/events/poll?timeoutMs=0&limit=1000`)).body.events as Array<
      Record<string, any>
    >;

  it("the snapshot lists the pending interrupt with its tokens", async () => {
    const { runId, snapshot, interrupt } = await atGate();
    expect(snapshot.currentNodeId).toBe("gate");
    expect(snapshot.interrupts).toHaveLength(1);
    expect(interrupt).toMatchObject({
      nodeId: "gate",
      kind: "approval",
      interruptId: expect.any(String),
      requestedAt: expect.any(String),
      data: { actions: ["accept", "reject"] },
    });
    expect(tokenPayload(interrupt.token)).toMatchObject({
      runId,
      nodeId: "gate",
      interruptId: interrupt.interruptId,
      intent: "resolve",
      kid: "k1",
    });
    expect(tokenPayload(interrupt.inspectToken)).toMatchObject({ runId, intent: "inspect" });
    const ttl = Date.parse(tokenPayload(interrupt.token).expiresAt) - Date.now();
    expect(ttl).toBeGreaterThan(29 * 60 * 1000);
    expect(ttl).toBeLessThanOrEqual(30 * 60 * 1000);
  });

  it("POST /v1/runs/{id}/interrupts/gate {resumeValue:{action:accept}} → 200 and the run completes; decidedBy is the caller", async () => {
    const { runId } = await atGate();
    const res = await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, {
      resumeValue: { action: "accept", decidedBy: "mallory" },
    });
    expect(res.status).toBe(200);
    expect(res.body.runId).toBe(runId);
    expect(res.body.interrupts).toEqual([]);
    await api.waitForRun(runId, (s) => s.status === "completed");
    const received = (await eventsOf(runId)).find((e) => e.type === "approval.received")!;
    expect(received.payload).toMatchObject({ action: "accept", decidedBy: "anonymous" });
  });

  it("refuses an invalid action (400), an unknown node (404) and an already resolved gate (409)", async () => {
    const { runId } = await atGate();
    const invalid = await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: "maybe" } });
    expect([400, 422]).toContain(invalid.status);
    expectErrorEnvelope(invalid.body, "validation_error");
    expect(invalid.body.message).toContain("accept");
    const notOffered = await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, {
      resumeValue: { action: "refine", feedback: "more" },
    });
    expect(notOffered.status).toBe(400);
    expect(notOffered.body.message).toContain("does not offer");
    const noValue = await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, { action: "accept" });
    expect(noValue.status).toBe(400);
    expect(noValue.body.message).toContain("resumeValue");
    expect((await api.call("GET", `/v1/runs/${runId}`)).body.status).toBe("waiting-approval");

    for (const node of ["nope", "done"]) {
      const unknown = await api.call("POST", `/v1/runs/${runId}/interrupts/${node}`, {
        resumeValue: { action: "accept" },
      });
      expect(unknown.status).toBe(404);
      expectErrorEnvelope(unknown.body, "interrupt_not_found");
    }
    const unknownRun = await api.call("POST", `/v1/runs/${randomUUID()}/interrupts/gate`, {
      resumeValue: { action: "accept" },
    });
    expect(unknownRun.status).toBe(404);
    expectErrorEnvelope(unknownRun.body, "not_found");

    expect(
      (await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: "accept" } })).status,
    ).toBe(200);
    const again = await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: "accept" } });
    expect(again.status).toBe(409);
    expectErrorEnvelope(again.body, "interrupt_already_resolved");
  });

  it("a gate the run has not reached yet is 404; a non-interrupt node is 404; the gate of a cancelled run is 409", async () => {
    const runId = await api.startRun("late-gate");
    await api.waitForRun(runId, (s) => s.currentNodeId === "warmup");
    const early = await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: "accept" } });
    expect(early.status).toBe(404);
    expectErrorEnvelope(early.body, "interrupt_not_found");
    expect(early.body.message).toContain("no pending interrupt");
    const delayNode = await api.call("POST", `/v1/runs/${runId}/interrupts/warmup`, { resumeValue: {} });
    expect(delayNode.status).toBe(404);
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    expect(
      (await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: "accept" } })).status,
    ).toBe(200);

    const cancelled = await atGate();
    await api.call("POST", `/v1/runs/${cancelled.runId}/cancel`);
    await api.waitForRun(cancelled.runId, (s) => s.status === "cancelled");
    const late = await api.call("POST", `/v1/runs/${cancelled.runId}/interrupts/gate`, {
      resumeValue: { action: "accept" },
    });
    expect(late.status).toBe(409);
    expectErrorEnvelope(late.body, "interrupt_already_resolved");
    expect(late.body.message).toContain("cancelled");
  });

  it("a clarification is answered over the same endpoint", async () => {
    const runId = await api.startRun("clarify", { text: "office hours" });
    const waiting = await api.waitForRun(runId, (s) => s.status === "waiting-input");
    expect(waiting.interrupts[0]).toMatchObject({
      nodeId: "ask-audience",
      kind: "clarification",
      data: { questions: [{ id: "audience" }] },
    });
    const wrong = await api.call("POST", `/v1/runs/${runId}/interrupts/ask-audience`, {
      resumeValue: { answers: [{ id: "nope", answer: 1 }] },
    });
    expect(wrong.status).toBe(400);
    const res = await api.call("POST", `/v1/runs/${runId}/interrupts/ask-audience`, {
      resumeValue: { answers: [{ id: "audience", answer: "developers" }] },
    });
    expect(res.status).toBe(200);
    await api.waitForRun(runId, (s) => s.status === "completed");
  });

  it("an interrupt that passed its deadline answers 410; its token never outlives the interrupt", async () => {
    const runId = await api.startRun("short-gate");
    const waiting = await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    const interrupt = waiting.interrupts[0];
    expect(Date.parse(tokenPayload(interrupt.token).expiresAt)).toBeLessThanOrEqual(Date.parse(interrupt.expiresAt));
    await api.waitForRun(runId, (s) => s.status === "failed");
    const late = await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: "accept" } });
    expect(late.status).toBe(410);
    expectErrorEnvelope(late.body, "interrupt_expired");
    const byToken = await api.call("POST", `/v1/interrupts/${interrupt.token}`, { resumeValue: { action: "accept" } });
    expect(byToken.status).toBe(410);
  });

  describe("signed interrupt tokens", () => {
    it("inspect with either token; resolve with the resolve token; replay is 409", async () => {
      const { runId, interrupt } = await atGate();
      for (const [token, intent] of [
        [interrupt.token, "resolve"],
        [interrupt.inspectToken, "inspect"],
      ] as const) {
        const seen = await api.call("GET", `/v1/interrupts/${token}`);
        expect(seen.status).toBe(200);
        expect(seen.body).toMatchObject({
          runId,
          workflowId: "conformance-approval",
          nodeId: "gate",
          interruptId: interrupt.interruptId,
          kind: "approval",
          status: "pending",
          runStatus: "waiting-approval",
          intent,
          data: { actions: ["accept", "reject"] },
        });
      }
      const res = await api.call("POST", `/v1/interrupts/${interrupt.token}`, { resumeValue: { action: "accept" } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        runId,
        nodeId: "gate",
        interruptId: interrupt.interruptId,
        resolved: true,
        status: "running",
      });
      await api.waitForRun(runId, (s) => s.status === "completed");
      const received = (await eventsOf(runId)).find((e) => e.type === "approval.received")!;
      expect(received.payload.decidedBy).toBe(`token:${interrupt.interruptId}`);

      const replay = await api.call("POST", `/v1/interrupts/${interrupt.token}`, { resumeValue: { action: "accept" } });
      expect(replay.status).toBe(409);
      expectErrorEnvelope(replay.body, "interrupt_already_resolved");
      const inspectAfter = await api.call("GET", `/v1/interrupts/${interrupt.inspectToken}`);
      expect(inspectAfter.status).toBe(409);
    });

    it("an inspect-only token cannot resolve (403); a bad resume value leaves the interrupt pending", async () => {
      const { runId, interrupt } = await atGate();
      const res = await api.call("POST", `/v1/interrupts/${interrupt.inspectToken}`, {
        resumeValue: { action: "accept" },
      });
      expect(res.status).toBe(403);
      expectErrorEnvelope(res.body, "forbidden");
      const invalid = await api.call("POST", `/v1/interrupts/${interrupt.token}`, { resumeValue: { action: "maybe" } });
      expect(invalid.status).toBe(400);
      expect((await api.call("GET", `/v1/runs/${runId}`)).body.status).toBe("waiting-approval");
      expect((await api.call("GET", `/v1/interrupts/${interrupt.token}`)).status).toBe(200);
    });

    it("malformed and tampered tokens are refused; a token never resolves another run", async () => {
      const a = await atGate();
      const b = await atGate();
      const malformed = await api.call("POST", `/v1/interrupts/not-a-token`, { resumeValue: { action: "accept" } });
      expect(malformed.status).toBe(400);
      expectErrorEnvelope(malformed.body, "validation_error");

      const [payload, signature] = a.interrupt.token.split(".");
      const flipped = `${payload}.${signature.startsWith("A") ? "B" : "A"}${signature.slice(1)}`;
      // Run A's payload pointed at run B, with A's signature: a cross-run forgery.
      const forged = Buffer.from(
        JSON.stringify({ ...tokenPayload(a.interrupt.token), runId: b.runId, interruptId: b.interrupt.interruptId }),
      ).toString("base64url");
      const inspectAsResolve = Buffer.from(
        JSON.stringify({ ...tokenPayload(a.interrupt.inspectToken), intent: "resolve" }),
      ).toString("base64url");
      for (const token of [
        flipped,
        `${forged}.${signature}`,
        `${inspectAsResolve}.${a.interrupt.inspectToken.split(".")[1]}`,
        `${payload}.`,
        `${payload}.${signature}.x`,
      ]) {
        for (const method of ["GET", "POST"]) {
          const res = await api.call(
            method,
            `/v1/interrupts/${token}`,
            method === "POST" ? { resumeValue: { action: "accept" } } : undefined,
          );
          expect([400, 404]).toContain(res.status);
          expectErrorEnvelope(res.body);
        }
      }
      // Run A's genuine token says run A; run B is untouched by all of the above.
      expect((await api.call("GET", `/v1/runs/${b.runId}`)).body.status).toBe("waiting-approval");
      expect((await api.call("GET", `/v1/runs/${a.runId}`)).body.status).toBe("waiting-approval");
      expect(
        (await api.call("POST", `/v1/interrupts/${a.interrupt.token}`, { resumeValue: { action: "reject" } })).status,
      ).toBe(200);
      await api.waitForRun(a.runId, (s) => s.status === "failed");
      expect((await api.call("GET", `/v1/runs/${b.runId}`)).body.status).toBe("waiting-approval");
    });

    it("a token of a cancelled run is spent (409)", async () => {
      const { runId, interrupt } = await atGate();
      await api.call("POST", `/v1/runs/${runId}/cancel`);
      await api.waitForRun(runId, (s) => s.status === "cancelled");
      const res = await api.call("POST", `/v1/interrupts/${interrupt.token}`, { resumeValue: { action: "accept" } });
      expect(res.status).toBe(409);
      expectErrorEnvelope(res.body, "interrupt_already_resolved");
    });

    it("the resolve token is in Task.metadata.openwop.interruptToken over A2A", async () => {
      const { runId } = await atGate();
      const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: runId } }),
      });
      const task = ((await res.json()) as { result: Record<string, any> }).result;
      const token = task.metadata.openwop.interruptToken as string;
      expect(tokenPayload(token)).toMatchObject({ runId, nodeId: "gate", intent: "resolve" });
      const seen = await api.call("GET", `/v1/interrupts/${token}`);
      expect(seen.body).toMatchObject({ runId, nodeId: "gate", status: "pending" });
      expect((await api.call("POST", `/v1/interrupts/${token}`, { resumeValue: { action: "accept" } })).status).toBe(
        200,
      );
      await api.waitForRun(runId, (s) => s.status === "completed");
      const after = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: runId } }),
      });
      expect(
        ((await after.json()) as { result: Record<string, any> }).result.metadata.openwop.interruptToken,
      ).toBeUndefined();
    });
  });
});

describe("OpenWOP interrupt tokens: expiry", () => {
  let t: TestApp;
  let api: ReturnType<typeof openwopClient>;
  beforeAll(async () => {
    t = await startTestApp({
      INTERRUPT_TOKEN_KEYS: testTokenKeys(),
      INTERRUPT_TOKEN_TTL_SECONDS: "1",
      DATA_DIR: await mkdtemp(join(tmpdir(), "openwop-ttl-")),
    });
    api = openwopClient(t.baseUrl);
  });
  afterAll(() => t.close());

  it("an expired token is 410 interrupt_expired and resolves nothing; reads keep showing that one token; the API key still resolves", async () => {
    const runId = await api.startRun("conformance-approval");
    const { interrupts } = await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    await new Promise((r) => setTimeout(r, 1100));
    for (const method of ["GET", "POST"]) {
      const res = await api.call(
        method,
        `/v1/interrupts/${interrupts[0].token}`,
        method === "POST" ? { resumeValue: { action: "accept" } } : undefined,
      );
      expect(res.status).toBe(410);
      expectErrorEnvelope(res.body, "interrupt_expired");
    }
    // Minted once per interrupt: a later read shows the same token, still expired.
    const again = (await api.call("GET", `/v1/runs/${runId}`)).body.interrupts[0];
    expect(again.token).toBe(interrupts[0].token);
    expect(
      (await api.call("POST", `/v1/interrupts/${again.token}`, { resumeValue: { action: "accept" } })).status,
    ).toBe(410);
    expect(
      (await api.call("POST", `/v1/runs/${runId}/interrupts/${again.nodeId}`, { resumeValue: { action: "accept" } }))
        .status,
    ).toBe(200);
  });
});

describe("OpenWOP interrupt tokens: a token signed with a key this host does not hold", () => {
  it("is refused (404), never resolves", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "openwop-keys-"));
    const signer = await startTestApp({
      INTERRUPT_TOKEN_KEYS: `other:${Buffer.alloc(32, 9).toString("base64")}`,
      DATA_DIR: dataDir,
    });
    const host = await startTestApp({ INTERRUPT_TOKEN_KEYS: testTokenKeys(), DATA_DIR: dataDir });
    try {
      const runId = await openwopClient(signer.baseUrl).startRun("conformance-approval");
      const { interrupts } = await openwopClient(signer.baseUrl).waitForRun(
        runId,
        (s) => s.status === "waiting-approval",
      );
      const res = await openwopClient(host.baseUrl).call("POST", `/v1/interrupts/${interrupts[0].token}`, {
        resumeValue: { action: "accept" },
      });
      expect(res.status).toBe(404);
      expectErrorEnvelope(res.body, "interrupt_not_found");
    } finally {
      await signer.close();
      await host.close();
    }
  });
});

describe("OpenWOP runs and interrupts with API keys", () => {
  const keys = {
    approver: "approver-key-0123456789",
    reader: "reader-key-0123456789",
    stranger: "stranger-key-0123456789",
  };
  let t: TestApp;
  beforeAll(async () => {
    const API_KEYS = JSON.stringify([
      {
        id: "approver",
        tenant: "acme",
        scopes: ["runs:create", "runs:read", "runs:cancel", "approvals:respond"],
        key: keys.approver,
      },
      { id: "reader", tenant: "acme", scopes: ["runs:read"], key: keys.reader },
      {
        id: "stranger",
        tenant: "other",
        scopes: ["runs:create", "runs:read", "runs:cancel", "approvals:respond"],
        key: keys.stranger,
      },
    ]);
    t = await startTestApp({
      API_KEYS,
      INTERRUPT_TOKEN_KEYS: testTokenKeys(),
      DATA_DIR: await mkdtemp(join(tmpdir(), "openwop-auth-")),
    });
  });
  afterAll(() => t.close());

  const as = (key: string) => {
    const base = openwopClient(t.baseUrl);
    return {
      call: (method: string, path: string, body?: unknown) =>
        base.call(method, path, body, { authorization: `Bearer ${key}` }),
    };
  };

  it("the resolve token goes only to callers allowed to respond; other tenants see nothing; tokens need no key", async () => {
    const approver = as(keys.approver);
    const created = await approver.call("POST", "/v1/runs", { workflowId: "conformance-approval" });
    expect(created.status).toBe(201);
    const runId = created.body.runId as string;
    let snapshot: any;
    for (let i = 0; i < 200; i++) {
      snapshot = (await approver.call("GET", `/v1/runs/${runId}`)).body;
      if (snapshot.status === "waiting-approval") break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(snapshot.owner).toEqual({ tenant: "acme", principal: "apikey:approver" });
    expect(snapshot.interrupts[0].token).toEqual(expect.any(String));

    const readerView = (await as(keys.reader).call("GET", `/v1/runs/${runId}`)).body;
    expect(readerView.interrupts[0].token).toBeUndefined();
    expect(readerView.interrupts[0].inspectToken).toEqual(expect.any(String));
    const readerResolve = await as(keys.reader).call("POST", `/v1/runs/${runId}/interrupts/gate`, {
      resumeValue: { action: "accept" },
    });
    expect(readerResolve.status).toBe(403);
    expectErrorEnvelope(readerResolve.body, "forbidden");
    const readerCreate = await as(keys.reader).call("POST", "/v1/runs", { workflowId: "conformance-noop" });
    expect(readerCreate.status).toBe(403);

    for (const [method, path, body] of [
      ["GET", `/v1/runs/${runId}`, undefined],
      ["GET", `/v1/runs/${runId}/events/poll?timeoutMs=0`, undefined],
      ["POST", `/v1/runs/${runId}/interrupts/gate`, { resumeValue: { action: "accept" } }],
      ["POST", `/v1/runs/${runId}/cancel`, undefined],
    ] as const) {
      const res = await as(keys.stranger).call(method, path, body);
      expect(res.status).toBe(404);
      expectErrorEnvelope(res.body, "not_found");
    }
    const noKey = await openwopClient(t.baseUrl).call("GET", `/v1/runs/${runId}`);
    expect(noKey.status).toBe(401);
    expectErrorEnvelope(noKey.body, "unauthenticated");

    // The token is the credential: no API key, and the run's own tenant applies.
    const inspect = await openwopClient(t.baseUrl).call(
      "GET",
      `/v1/interrupts/${readerView.interrupts[0].inspectToken}`,
    );
    expect(inspect.status).toBe(200);
    const resolved = await openwopClient(t.baseUrl).call("POST", `/v1/interrupts/${snapshot.interrupts[0].token}`, {
      resumeValue: { action: "accept" },
    });
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ runId, resolved: true });
  });
});
