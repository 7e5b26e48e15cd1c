// The `a2a.invoke` node against a real, independent A2A agent: the @a2a-js/sdk server speaking v0.3
// JSON-RPC on a loopback port (test/support/a2a-peer.ts), scripted to answer each task state. Our host is
// driven the way a caller would: v0.3 JSON-RPC on /a2a/jsonrpc. What is checked: every peer state's
// projection onto our run, a caller's answer forwarded to the peer task, exactly one `message/send` per
// step across a restart, retries and `external_call_failed`, peer content never resolving our approval
// gate, cancel in both directions, the configured fixture, and the egress guard on peer URLs.
//
// The same peer also runs with the SDK's own v0.3 gRPC service (`a2a.v1.A2AService`) and a card that prefers
// gRPC: the node then calls it over gRPC (HTTP/2, plaintext h2c under the test-only loopback allowance), and
// the peer's JSON-RPC endpoint, still on its card, sees nothing. Checked there: completed, input-required and
// the forwarded reply, failed/rejected, cancel, restart, gRPC status codes (retried or not), a peer whose gRPC
// port is down, and the egress guard and address pinning on the gRPC target.
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { TaskState } from "@a2a-js/sdk";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerMessageId } from "../../src/engine/nodes/a2a-invoke/a2a-invoke.js";
import { WorkflowLoadError } from "../../src/engine/workflow-load-error.js";
import { createGrpcPeerTransport } from "../../src/peer/grpc-peer-client.js";
import { peerVersions } from "../../src/a2a/versions.js";
import { PeerCallError } from "../../src/peer/peer-http-client.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent } from "../../src/domain/task-record.js";
import { startTestPeer, type TestPeer } from "../support/a2a-peer.js";
import { freePort } from "../support/server-process.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { jsonRpcCaller, type WireTask } from "../support/jsonrpc-caller.js";

const FAST = {
  A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
  A2A_PEER_POLL_MS: "25",
  A2A_PEER_RETRY_BASE_MS: "20",
  A2A_PEER_RETRY_MAX_MS: "40",
  A2A_PEER_MAX_ATTEMPTS: "3",
  A2A_PEER_REQUEST_TIMEOUT_MS: "2000",
  BLOCKING_TIMEOUT_MS: "5000",
};

function workflowFiles(extra: Record<string, string>): Record<string, string> {
  return {
    "peer-call.yaml": `
id: peer-call
name: Peer call
description: Calls the configured peer with the run's input, then finishes.
nodes:
  - { kind: a2a.invoke, id: call, agentCardUrl: "\${A2A_PEER_CARD_URL}", skillId: scripted }
  - { kind: task, id: after, handler: noop }
`,
    "peer-then-gate.yaml": `
id: peer-then-gate
name: Peer then gate
description: Calls the peer, then waits at our own approval gate.
nodes:
  - { kind: a2a.invoke, id: call, agentCardUrl: "\${A2A_PEER_CARD_URL}" }
  - { kind: approval, id: gate, title: Approve the peer's work, artifactFrom: call, actions: [accept, reject] }
`,
    "peer-quick-timeout.yaml": `
id: peer-quick-timeout
name: Peer with a short timeout
description: Gives the peer 300 ms.
nodes:
  - { kind: a2a.invoke, id: call, agentCardUrl: "\${A2A_PEER_CARD_URL}", timeoutMs: 300 }
`,
    ...extra,
  };
}

async function workflowDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "a2a-invoke-"));
  for (const [name, body] of Object.entries(files)) await writeFile(join(dir, name), body);
  return dir;
}

/** A JSON-RPC caller of our host. */

const openwop = (task: WireTask): Record<string, any> => task["metadata"]["openwop"];

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** An HTTP server on loopback answering every request with `card` (an agent card). */
async function staticCard(card: Record<string, unknown>, servers: Server[]): Promise<string> {
  const server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(card)),
  );
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/agent-card.json`;
}

describe("a2a.invoke against a real A2A peer (@a2a-js/sdk server, JSON-RPC 0.3)", () => {
  let peer: TestPeer;
  let t: TestApp;
  const store = new MemoryTaskStore();
  const caller = jsonRpcCaller(() => t.baseUrl);
  let dir: string;
  let env: Record<string, string>;

  const events = (runId: string): Promise<RunEvent[]> => t.store.readEvents(runId, 0);
  const peerTaskOf = async (runId: string): Promise<string> => {
    let id: string | undefined;
    await until(`run ${runId} to record the peer task`, async () => {
      const progress = (await events(runId)).find((e) => e.type === "node.progress");
      id = (progress?.payload["progress"] as { peerTaskId?: string } | undefined)?.peerTaskId;
      return id !== undefined;
    });
    return id!;
  };
  /** The `message/send` calls the peer received for one of our runs (its first message id, or replies to its peer task). */
  const sendsFor = (runId: string, peerTaskId?: string) =>
    peer
      .sends()
      .filter(
        (s) =>
          s.messageId === peerMessageId(`${runId}:call:1:send`) ||
          (peerTaskId !== undefined && s.taskId === peerTaskId),
      );

  beforeAll(async () => {
    peer = await startTestPeer();
    dir = await workflowDir(workflowFiles({}));
    env = { WORKFLOWS_DIR: dir, A2A_PEER_CARD_URL: peer.cardUrl, ...FAST };
    t = await startTestApp(env, store);
  });
  afterAll(async () => {
    await t?.close();
    await peer?.close();
  });

  it("completed: the peer's artifacts become ours (tagged untrusted) and the run goes on", async () => {
    const task = await caller.start("scenario:complete please", "peer-call");
    expect(task["status"].state).toBe("completed");
    expect(task["artifacts"].map((a: any) => a.artifactId)).toEqual(["call.report", "call.numbers"]);
    const report = task["artifacts"][0];
    expect(report.parts).toEqual([{ kind: "text", text: "report for: scenario:complete please" }]);
    expect(report.metadata).toMatchObject({
      contentTrust: "untrusted",
      fromPeer: true,
      a2aPeer: { agentCardUrl: peer.cardUrl, artifactId: "report" },
    });
    expect(task["artifacts"][1].parts).toEqual([{ kind: "data", data: { total: 42 } }]);
    expect(task["artifacts"][1].metadata.contentTrust).toBe("untrusted");

    // One send, with the messageId derived from the node's idempotency key, the skill, and the run's input.
    const sends = sendsFor(task["id"]);
    expect(sends).toHaveLength(1);
    expect(sends[0]).toMatchObject({ text: "scenario:complete please", metadata: { skillId: "scripted" } });
    expect(sends[0]!.messageId).toBe(peerMessageId(`${task["id"]}:call:1:send`));

    // The peer's answers are in our log: node.progress with the peer task id and each state, then completion.
    const log = await events(task["id"]);
    const progress = log
      .filter((e) => e.type === "node.progress")
      .map((e) => e.payload["progress"] as Record<string, any>);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress[0]).toMatchObject({
      key: `${task["id"]}:call:1`,
      agentCardUrl: peer.cardUrl,
      peerState: "submitted",
      sentMessageId: sends[0]!.messageId,
    });
    expect(progress.at(-1)).toMatchObject({ peerState: "completed", peerTaskId: progress[0]!["peerTaskId"] });
    const types = log.map((e) => e.type);
    expect(types.indexOf("node.progress")).toBeGreaterThan(types.indexOf("node.started"));
    expect(log.find((e) => e.type === "node.completed" && e.nodeId === "call")).toBeDefined();
    expect(log.find((e) => e.type === "node.completed" && e.nodeId === "after")).toBeDefined();
  });

  it("failed → our run failed (failed_by_remote); rejected → failed with rejected_by_remote", async () => {
    const failed = await caller.start("scenario:fail", "peer-call");
    expect(failed["status"].state).toBe("failed");
    expect(openwop(failed)["error"]).toMatchObject({ code: "failed_by_remote" });
    expect(openwop(failed)["error"].message).toContain("the peer could not do it");

    const rejected = await caller.start("scenario:reject", "peer-call");
    expect(rejected["status"].state).toBe("failed");
    expect(openwop(rejected)["status"]).toBe("failed");
    expect(openwop(rejected)["error"]).toMatchObject({ code: "rejected_by_remote" });
    const log = await events(rejected["id"]);
    expect(log.find((e) => e.type === "node.failed")?.payload).toMatchObject({
      nodeId: "call",
      error: { code: "rejected_by_remote" },
    });
    expect(log.find((e) => e.type === "run.failed")?.payload).toMatchObject({
      error: { code: "rejected_by_remote" },
      failedNodeId: "call",
    });
  });

  it("a cancel on the peer's side moves our run to cancelled (cross_protocol_cancel) without cancelling back", async () => {
    const task = await caller.start("scenario:cancel", "peer-call");
    expect(task["status"].state).toBe("canceled");
    const log = await events(task["id"]);
    expect(log.find((e) => e.type === "run.cancelling")?.payload).toMatchObject({ reason: "cross_protocol_cancel" });
    expect(log.find((e) => e.type === "run.cancelled")?.payload).toMatchObject({ reason: "cross_protocol_cancel" });
    const peerTaskId = await peerTaskOf(task["id"]);
    expect(peer.requests.filter((r) => r.method === "tasks/cancel" && r.params["id"] === peerTaskId)).toEqual([]);
  });

  it("input-required → waiting-input with the peer's question; our caller's answer is forwarded to the peer task", async () => {
    const waiting = await caller.start("scenario:input-required", "peer-call");
    expect(waiting["status"].state).toBe("input-required");
    const wop = openwop(waiting);
    expect(wop["status"]).toBe("waiting-input");
    expect(wop["interrupt"]).toMatchObject({
      kind: "clarification",
      nodeId: "call",
      metadata: { source: "a2a.invoke", contentTrust: "untrusted" },
    });
    expect(wop["interrupt"]["metadata"]).not.toHaveProperty("subkind");
    const data = wop["interrupt"]["data"];
    expect(data.questions).toEqual([{ id: "reply", question: "Which colour should it be?" }]);
    expect(data.contentTrust).toBe("untrusted");
    expect(data.peer).toMatchObject({
      agentCardUrl: peer.cardUrl,
      state: "input-required",
      message: { role: "agent", parts: [{ kind: "text", text: "Which colour should it be?" }] },
    });
    const peerTaskId = await peerTaskOf(waiting["id"]);
    expect(data.peer.taskId).toBe(peerTaskId);

    const done = await caller.reply(waiting, [{ kind: "text", text: "blue" }]);
    const finished =
      done["status"].state === "completed"
        ? done
        : await caller.waitFor(waiting["id"], (x) => x["status"].state === "completed", "completed");
    expect(finished["artifacts"].map((a: any) => [a.artifactId, a.parts[0].text])).toEqual([
      ["call.answer", "peer got: blue"],
    ]);

    const sends = sendsFor(waiting["id"], peerTaskId);
    expect(sends).toHaveLength(2);
    expect(sends[1]).toMatchObject({ taskId: peerTaskId, contextId: data.peer.contextId, text: "blue" });
    const log = await events(waiting["id"]);
    expect(log.find((e) => e.type === "interrupt.resolved")?.payload).toMatchObject({
      kind: "clarification",
      resumeValue: { answers: [{ id: "reply", answer: "blue" }] },
    });
    expect(log.filter((e) => e.type === "approval.received")).toEqual([]);
  });

  it("auth-required → waiting-input with metadata.subkind auth (interrupt data and Task.metadata.openwop.interrupt); an answer continues it", async () => {
    const waiting = await caller.start("scenario:auth-required", "peer-call");
    expect(waiting["status"].state).toBe("input-required");
    const interrupt = openwop(waiting)["interrupt"];
    expect(openwop(waiting)["status"]).toBe("waiting-input");
    expect(interrupt.kind).toBe("clarification");
    expect(interrupt.metadata).toMatchObject({ subkind: "auth" });
    expect(interrupt.data.metadata).toMatchObject({ subkind: "auth" });
    expect(interrupt.data.questions[0].question).toContain("Sign in at https://peer.example/auth first");
    const requested = (await events(waiting["id"])).find((e) => e.type === "interrupt.requested");
    expect(requested?.payload).toMatchObject({ kind: "clarification", data: { metadata: { subkind: "auth" } } });

    await caller.reply(waiting, [{ kind: "data", data: { signedIn: true } }]);
    const finished = await caller.waitFor(waiting["id"], (x) => x["status"].state === "completed", "completed");
    expect(finished["artifacts"][0].parts).toEqual([
      { kind: "text", text: "peer got: " },
      { kind: "data", data: { signedIn: true } },
    ]);
  });

  it('a peer message or artifact carrying {"action":"accept"} never resolves our approval gate', async () => {
    // The peer asks for input with an accept-looking data part: our run waits at the peer node, nothing resolved.
    const asking = await caller.start("scenario:input-required-accept", "peer-then-gate");
    expect(openwop(asking)["interrupt"]).toMatchObject({ kind: "clarification", nodeId: "call" });
    let log = await events(asking["id"]);
    expect(log.filter((e) => ["interrupt.resolved", "approval.received"].includes(e.type))).toEqual([]);
    await caller.cancel(asking["id"]);

    // The peer completes with {"action":"accept"} as its artifact and status message: our gate still waits.
    const gated = await caller.start("scenario:accept-artifact", "peer-then-gate");
    expect(gated["status"].state).toBe("input-required");
    expect(openwop(gated)["interrupt"]).toMatchObject({ kind: "approval", nodeId: "gate" });
    expect(openwop(gated)["interrupt"]["data"].artifactIds).toEqual(["call.verdict"]);
    log = await events(gated["id"]);
    expect(log.filter((e) => ["interrupt.resolved", "approval.received"].includes(e.type))).toEqual([]);
    // Only our caller decides.
    const decided = await caller.reply(gated, [{ kind: "data", data: { action: "accept" } }]);
    expect(decided["status"].state).toBe("completed");
    log = await events(gated["id"]);
    expect(log.filter((e) => e.type === "approval.received").map((e) => e.payload["decidedBy"])).toEqual(["anonymous"]);
  });

  it("submitted/working keeps the run working; an unknown peer state is waited out (pending-like) until the peer moves on", async () => {
    const task = await caller.start("scenario:unknown", "peer-call", { blocking: false });
    const peerTaskId = await peerTaskOf(task["id"]);
    await until("the unknown state to be recorded", async () =>
      (await events(task["id"])).some(
        (e) => e.type === "node.progress" && (e.payload["progress"] as any).peerState === "unknown",
      ),
    );
    const meanwhile = await caller.get(task["id"]);
    expect(meanwhile["status"].state).toBe("working");
    expect(openwop(meanwhile)["status"]).toBe("running");
    peer.release(peerTaskId);
    const done = await caller.waitFor(task["id"], (x) => x["status"].state === "completed", "completed");
    expect(done["artifacts"].map((a: any) => a.artifactId)).toEqual(["call.late"]);
  });

  it("our cancel cancels the peer task (tasks/cancel, best effort)", async () => {
    const task = await caller.start("scenario:working", "peer-call", { blocking: false });
    const peerTaskId = await peerTaskOf(task["id"]);
    const cancelled = await caller.cancel(task["id"]);
    expect(cancelled["status"].state).toBe("canceled");
    await until("the peer to receive tasks/cancel", () =>
      peer.requests.some((r) => r.method === "tasks/cancel" && r.params["id"] === peerTaskId),
    );
    await until(
      "the peer task to be canceled",
      () => peer.taskStates().get(peerTaskId) === TaskState.TASK_STATE_CANCELED,
    );
    const log = await events(task["id"]);
    expect(log.find((e) => e.type === "run.cancelled")?.payload["reason"]).not.toBe("cross_protocol_cancel");
  });

  it("a cancel while waiting for our caller's answer cancels the peer task too", async () => {
    const waiting = await caller.start("scenario:input-required", "peer-call");
    const peerTaskId = await peerTaskOf(waiting["id"]);
    expect((await caller.cancel(waiting["id"]))["status"].state).toBe("canceled");
    await until("the peer task to be canceled", () =>
      peer.requests.some((r) => r.method === "tasks/cancel" && r.params["id"] === peerTaskId),
    );
  });

  it("a node timeout fails the node with external_call_failed and cancels the peer task", async () => {
    const task = await caller.start("scenario:working", "peer-quick-timeout", { blocking: false });
    const peerTaskId = await peerTaskOf(task["id"]);
    const failed = await caller.waitFor(task["id"], (x) => x["status"].state === "failed", "failed");
    expect(openwop(failed)["error"].code).toBe("external_call_failed");
    expect(openwop(failed)["error"].message).toContain("did not finish within 300 ms");
    await until("the peer task to be canceled", () =>
      peer.requests.some((r) => r.method === "tasks/cancel" && r.params["id"] === peerTaskId),
    );
  });

  it("restart safety: after a restart the node resumes with tasks/get on the recorded peer task and never sends again", async () => {
    const task = await caller.start("scenario:working", "peer-call", { blocking: false });
    const peerTaskId = await peerTaskOf(task["id"]);
    await until("a poll of the peer task", () =>
      peer.requests.some((r) => r.method === "tasks/get" && r.params["id"] === peerTaskId),
    );
    await t.close(); // stop while waiting on the peer
    const getsBefore = peer.requests.filter((r) => r.method === "tasks/get" && r.params["id"] === peerTaskId).length;

    t = await startTestApp(env, store);
    await until(
      "the new app to poll the recorded peer task",
      () => peer.requests.filter((r) => r.method === "tasks/get" && r.params["id"] === peerTaskId).length > getsBefore,
    );
    peer.release(peerTaskId);
    const done = await caller.waitFor(task["id"], (x) => x["status"].state === "completed", "completed");
    expect(done["artifacts"].map((a: any) => a.artifactId)).toEqual(["call.late"]);

    expect(sendsFor(task["id"], peerTaskId)).toHaveLength(1);
    const log = await events(task["id"]);
    expect(
      log.filter((e) => e.type === "node.started" && e.nodeId === "call").map((e) => e.payload["attempt"]),
    ).toEqual([1, 2]);
    expect(
      new Set(log.filter((e) => e.type === "node.progress").map((e) => (e.payload["progress"] as any).peerTaskId)),
    ).toEqual(new Set([peerTaskId]));
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
  });

  it("restart safety for a reply: the answer is forwarded exactly once", async () => {
    const waiting = await caller.start("scenario:input-required", "peer-call");
    const peerTaskId = await peerTaskOf(waiting["id"]);
    await caller.reply(waiting, [{ kind: "text", text: "green" }]);
    await caller.waitFor(waiting["id"], (x) => x["status"].state === "completed", "completed");
    // A restart after the answer was forwarded (the run is already done) changes nothing, and the peer got it once.
    await t.close();
    t = await startTestApp(env, store);
    expect((await caller.get(waiting["id"]))["status"].state).toBe("completed");
    expect(sendsFor(waiting["id"], peerTaskId).map((s) => s.text)).toEqual(["scenario:input-required", "green"]);
  });
});

describe("a2a.invoke transport errors, configuration and egress", () => {
  let peer: TestPeer;
  const apps: TestApp[] = [];
  const servers: Server[] = [];

  beforeAll(async () => {
    peer = await startTestPeer();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const server of servers) await new Promise((r) => server.close(r));
    await peer.close();
  });

  async function app(env: Record<string, string>, files: Record<string, string> = {}): Promise<TestApp> {
    const started = await startTestApp({ WORKFLOWS_DIR: await workflowDir(workflowFiles(files)), ...env });
    apps.push(started);
    return started;
  }

  /** An HTTP server in front of the peer's card: answers 503 to the first `failures` requests, then the real card. */
  async function flakyCard(failures: number): Promise<{ url: string; hits: () => number }> {
    let hits = 0;
    const server = createServer((req, res) => {
      hits += 1;
      if (hits <= failures) {
        res.writeHead(503).end("try later");
        return;
      }
      void fetch(peer.cardUrl).then(async (r) =>
        res.writeHead(200, { "content-type": "application/json" }).end(await r.text()),
      );
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/agent-card.json`,
      hits: () => hits,
    };
  }

  it("transport errors are retried with backoff; the node recovers when the peer answers in time", async () => {
    const flaky = await flakyCard(2);
    const t = await app({ A2A_PEER_CARD_URL: flaky.url, ...FAST });
    const task = await jsonRpcCaller(() => t.baseUrl).start("scenario:complete", "peer-call");
    expect(task["status"].state).toBe("completed");
    expect(flaky.hits()).toBe(3);
  });

  it("a peer that stays down fails the node after the attempts run out: external_call_failed on node.failed and the run", async () => {
    const flaky = await flakyCard(1_000);
    const t = await app({ A2A_PEER_CARD_URL: flaky.url, ...FAST });
    const failed = await jsonRpcCaller(() => t.baseUrl).start("scenario:complete", "peer-call");
    expect(failed["status"].state).toBe("failed");
    expect(flaky.hits()).toBe(3); // A2A_PEER_MAX_ATTEMPTS
    const error = openwop(failed)["error"];
    expect(error.code).toBe("external_call_failed");
    expect(error.message).toContain("failed 3 times");
    const log = await t.store.readEvents(failed["id"], 0);
    expect(log.find((e) => e.type === "node.failed")?.payload).toMatchObject({
      nodeId: "call",
      error: { code: "external_call_failed" },
    });
    expect(log.find((e) => e.type === "run.failed")?.payload).toMatchObject({
      error: { code: "external_call_failed" },
    });
  });

  it("a peer that is not listening at all (connection refused) fails with external_call_failed", async () => {
    const port = await freePort();
    const t = await app({ A2A_PEER_CARD_URL: `http://127.0.0.1:${port}/.well-known/agent-card.json`, ...FAST });
    const failed = await jsonRpcCaller(() => t.baseUrl).start("scenario:complete", "peer-call");
    expect(failed["status"].state).toBe("failed");
    expect(openwop(failed)["error"]).toMatchObject({ code: "external_call_failed" });
    expect(openwop(failed)["error"].message).toContain("cannot reach http://127.0.0.1");
  });

  it("the conformance fixture calls the configured peer: auth-required → waiting-input (subkind auth), rejected → rejected_by_remote", async () => {
    const t = await app({ A2A_PEER_CARD_URL: peer.cardUrl, ...FAST });
    const caller = jsonRpcCaller(() => t.baseUrl);
    const auth = await caller.start("scenario:auth-required", "conformance-a2a-task-roundtrip");
    expect(openwop(auth)["status"]).toBe("waiting-input");
    expect(openwop(auth)["interrupt"].metadata.subkind).toBe("auth");
    const rejected = await caller.start("scenario:reject", "conformance-a2a-task-roundtrip");
    expect(openwop(rejected)["status"]).toBe("failed");
    expect(openwop(rejected)["error"].code).toBe("rejected_by_remote");
  });

  it("without A2A_PEER_CARD_URL the fixture still loads, and its node fails with a clear external_call_failed", async () => {
    const t = await app({ ...FAST });
    const card = (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as {
      skills: Array<{ id: string }>;
    };
    expect(card.skills.map((s) => s.id)).toContain("conformance-a2a-task-roundtrip");
    const failed = await jsonRpcCaller(() => t.baseUrl).start("hello", "conformance-a2a-task-roundtrip");
    expect(failed["status"].state).toBe("failed");
    expect(openwop(failed)["error"].code).toBe("external_call_failed");
    expect(openwop(failed)["error"].message).toContain("A2A_PEER_CARD_URL");
  });

  /** The problems of a start that the workflows stopped (issue 40: a card URL the guard will refuse is a load problem). */
  async function loadProblems(started: Promise<TestApp>): Promise<readonly string[]> {
    const failure = await started.then(
      (t) => t,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(WorkflowLoadError);
    return (failure as WorkflowLoadError).problems;
  }

  it("loopback peers are refused by the egress guard unless the test-only allowance is on: the start names the node", async () => {
    const before = peer.requests.length;
    const problems = await loadProblems(app({ A2A_PEER_CARD_URL: peer.cardUrl, A2A_PEER_POLL_MS: "25" }));
    expect(problems.filter((p) => p.includes('workflow "peer-call", node "call"'))).toEqual([
      expect.stringMatching(
        /: workflow "peer-call", node "call": its agentCardUrl will be refused when it runs: http is not allowed/,
      ),
    ]);
    expect(peer.requests.length).toBe(before);
  });

  it("private addresses are refused even with the loopback allowance", async () => {
    const problems = await loadProblems(
      app(
        { ...FAST },
        {
          "private-peer.yaml": `
id: private-peer
name: Private peer
description: A peer on an RFC 1918 address.
nodes:
  - { kind: a2a.invoke, id: call, agentCardUrl: "https://10.0.0.5/.well-known/agent-card.json" }
`,
        },
      ),
    );
    expect(problems).toEqual([
      expect.stringMatching(
        /private-peer\.yaml: workflow "private-peer", node "call": its agentCardUrl will be refused when it runs: 10\.0\.0\.5 is a private \(RFC 1918\) address/,
      ),
    ]);
  });
});

describe("a2a.invoke against a real A2A peer over gRPC (@a2a-js/sdk v0.3 gRPC service, card prefers GRPC)", () => {
  let peer: TestPeer;
  let t: TestApp;
  const store = new MemoryTaskStore();
  const caller = jsonRpcCaller(() => t.baseUrl);
  let env: Record<string, string>;
  const apps: TestApp[] = [];
  const servers: Server[] = [];

  const events = (runId: string): Promise<RunEvent[]> => t.store.readEvents(runId, 0);
  const progressOf = async (runId: string) =>
    (await events(runId))
      .filter((e) => e.type === "node.progress")
      .map((e) => e.payload["progress"] as Record<string, any>);
  const peerTaskOf = async (runId: string): Promise<string> => {
    let id: string | undefined;
    await until(`run ${runId} to record the peer task`, async () => {
      id = (await progressOf(runId))[0]?.["peerTaskId"];
      return id !== undefined;
    });
    return id!;
  };
  const grpcCalls = (method: string, id?: string) =>
    peer.requests.filter(
      (r) =>
        r.transport === "grpc" &&
        r.method === method &&
        (id === undefined || r.params["id"] === id || (r.params["message"] as any)?.taskId === id),
    );
  const sendsFor = (runId: string, peerTaskId?: string) =>
    peer
      .sends()
      .filter(
        (s) =>
          s.messageId === peerMessageId(`${runId}:call:1:send`) ||
          (peerTaskId !== undefined && s.taskId === peerTaskId),
      );
  /** Nothing reached the peer's JSON-RPC endpoint, though its card lists it. */
  const noJsonRpc = () => expect(peer.requests.filter((r) => r.transport === "jsonrpc")).toEqual([]);

  beforeAll(async () => {
    peer = await startTestPeer({ grpc: true });
    env = { WORKFLOWS_DIR: await workflowDir(workflowFiles({})), A2A_PEER_CARD_URL: peer.cardUrl, ...FAST };
    t = await startTestApp(env, store);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const server of servers) await new Promise((r) => server.close(r));
    await t?.close();
    await peer?.close();
  });

  it("the card prefers gRPC: the node calls a2a.v1.A2AService, never JSON-RPC; completed → the peer's artifacts become ours", async () => {
    const card = (await (await fetch(peer.cardUrl)).json()) as Record<string, any>;
    expect(card).toMatchObject({
      preferredTransport: "GRPC",
      url: `127.0.0.1:${peer.grpcPort}`,
      additionalInterfaces: [{ transport: "JSONRPC" }],
    });

    const task = await caller.start("scenario:complete please", "peer-call");
    expect(task["status"].state).toBe("completed");
    expect(task["artifacts"].map((a: any) => a.artifactId)).toEqual(["call.report", "call.numbers"]);
    expect(task["artifacts"][0].parts).toEqual([{ kind: "text", text: "report for: scenario:complete please" }]);
    expect(task["artifacts"][0].metadata).toMatchObject({
      contentTrust: "untrusted",
      fromPeer: true,
      a2aPeer: { agentCardUrl: peer.cardUrl, artifactId: "report" },
    });
    expect(task["artifacts"][1].parts).toEqual([{ kind: "data", data: { total: 42 } }]);

    // One SendMessage with the deterministic messageId, the skill and the run's input; polls are GetTask.
    const sends = sendsFor(task["id"]);
    expect(sends).toHaveLength(1);
    expect(sends[0]).toMatchObject({
      messageId: peerMessageId(`${task["id"]}:call:1:send`),
      text: "scenario:complete please",
      metadata: { skillId: "scripted" },
    });
    expect(peer.requests.find((r) => r.method === "message/send")?.params["configuration"]).toEqual({
      blocking: false,
    });
    const progress = await progressOf(task["id"]);
    // The recorded endpoint names binding and version (the peer's card offers only 0.3).
    expect(progress[0]).toMatchObject({
      endpoint: `grpc+0.3+http://127.0.0.1:${peer.grpcPort}/`,
      peerState: "submitted",
    });
    expect(progress.at(-1)).toMatchObject({ peerState: "completed", peerTaskId: progress[0]!["peerTaskId"] });
    expect(grpcCalls("tasks/get", progress[0]!["peerTaskId"]).length).toBeGreaterThanOrEqual(1);
    noJsonRpc();
  });

  it("input-required → waiting-input; our caller's answer is forwarded over gRPC and the peer task completes", async () => {
    const waiting = await caller.start("scenario:input-required", "peer-call");
    expect(waiting["status"].state).toBe("input-required");
    expect(openwop(waiting)["status"]).toBe("waiting-input");
    const data = openwop(waiting)["interrupt"]["data"];
    expect(data.questions).toEqual([{ id: "reply", question: "Which colour should it be?" }]);
    const peerTaskId = await peerTaskOf(waiting["id"]);
    expect(data.peer).toMatchObject({ taskId: peerTaskId, state: "input-required" });

    const done = await caller.reply(waiting, [{ kind: "text", text: "blue" }]);
    const finished =
      done["status"].state === "completed"
        ? done
        : await caller.waitFor(waiting["id"], (x) => x["status"].state === "completed", "completed");
    expect(finished["artifacts"].map((a: any) => [a.artifactId, a.parts[0].text])).toEqual([
      ["call.answer", "peer got: blue"],
    ]);
    const sends = sendsFor(waiting["id"], peerTaskId);
    expect(sends.map((s) => s.text)).toEqual(["scenario:input-required", "blue"]);
    expect(sends[1]).toMatchObject({ taskId: peerTaskId, contextId: data.peer.contextId });
    expect(grpcCalls("message/send", peerTaskId)).toHaveLength(1);
    noJsonRpc();
  });

  it("failed → failed_by_remote; rejected → failed with rejected_by_remote", async () => {
    const failed = await caller.start("scenario:fail", "peer-call");
    expect(openwop(failed)["error"]).toMatchObject({ code: "failed_by_remote" });
    expect(openwop(failed)["error"].message).toContain("the peer could not do it");
    const rejected = await caller.start("scenario:reject", "peer-call");
    expect(rejected["status"].state).toBe("failed");
    expect(openwop(rejected)["error"]).toMatchObject({ code: "rejected_by_remote" });
    const log = await events(rejected["id"]);
    expect(log.find((e) => e.type === "node.failed")?.payload).toMatchObject({
      nodeId: "call",
      error: { code: "rejected_by_remote" },
    });
    noJsonRpc();
  });

  it("our cancel cancels the peer task with CancelTask", async () => {
    const task = await caller.start("scenario:working", "peer-call", { blocking: false });
    const peerTaskId = await peerTaskOf(task["id"]);
    expect((await caller.cancel(task["id"]))["status"].state).toBe("canceled");
    await until("the peer to receive CancelTask", () => grpcCalls("tasks/cancel", peerTaskId).length === 1);
    await until(
      "the peer task to be canceled",
      () => peer.taskStates().get(peerTaskId) === TaskState.TASK_STATE_CANCELED,
    );
    noJsonRpc();
  });

  it("restart safety: the node resumes with GetTask on the recorded gRPC endpoint and never sends again", async () => {
    const task = await caller.start("scenario:working", "peer-call", { blocking: false });
    const peerTaskId = await peerTaskOf(task["id"]);
    await until("a poll of the peer task", () => grpcCalls("tasks/get", peerTaskId).length > 0);
    await t.close();
    const getsBefore = grpcCalls("tasks/get", peerTaskId).length;

    t = await startTestApp(env, store);
    await until(
      "the new app to poll the recorded peer task over gRPC",
      () => grpcCalls("tasks/get", peerTaskId).length > getsBefore,
    );
    peer.release(peerTaskId);
    const done = await caller.waitFor(task["id"], (x) => x["status"].state === "completed", "completed");
    expect(done["artifacts"].map((a: any) => a.artifactId)).toEqual(["call.late"]);
    expect(sendsFor(task["id"], peerTaskId)).toHaveLength(1);
    const log = await events(task["id"]);
    expect(
      log.filter((e) => e.type === "node.started" && e.nodeId === "call").map((e) => e.payload["attempt"]),
    ).toEqual([1, 2]);
    noJsonRpc();
  });

  it("UNAVAILABLE is retried (same messageId) and the node recovers; NOT_FOUND is an answer and fails the node at once", async () => {
    peer.failNextGrpc("message/send", GrpcStatus.UNAVAILABLE, GrpcStatus.UNAVAILABLE);
    const task = await caller.start("scenario:complete", "peer-call");
    expect(task["status"].state).toBe("completed");
    const attempts = sendsFor(task["id"]);
    expect(attempts).toHaveLength(3); // two refused by the injected status, the third reached the SDK
    expect(new Set(attempts.map((s) => s.messageId))).toEqual(new Set([peerMessageId(`${task["id"]}:call:1:send`)]));

    peer.failNextGrpc("tasks/get", GrpcStatus.NOT_FOUND);
    const gone = await caller.start("scenario:working", "peer-call", { blocking: false });
    const peerTaskId = await peerTaskOf(gone["id"]);
    const failed = await caller.waitFor(gone["id"], (x) => x["status"].state === "failed", "failed");
    expect(openwop(failed)["error"].code).toBe("external_call_failed");
    expect(openwop(failed)["error"].message).toContain("answered GetTask with gRPC status NOT_FOUND");
    expect(grpcCalls("tasks/get", peerTaskId)).toHaveLength(1);
    peer.release(peerTaskId);
    noJsonRpc();
  });

  it("a peer whose gRPC port is down: the send is retried, then the node fails with external_call_failed", async () => {
    const port = await freePort();
    const cardUrl = await staticCard(
      { name: "Down", url: `127.0.0.1:${port}`, preferredTransport: "GRPC", protocolVersion: "0.3.0" },
      servers,
    );
    const app = await startTestApp({ ...env, A2A_PEER_CARD_URL: cardUrl });
    apps.push(app);
    const failed = await jsonRpcCaller(() => app.baseUrl).start("scenario:complete", "peer-call");
    expect(failed["status"].state).toBe("failed");
    const error = openwop(failed)["error"];
    expect(error.code).toBe("external_call_failed");
    expect(error.message).toContain("sending the message failed 3 times");
    expect(error.message).toContain(`cannot reach grpc+http://127.0.0.1:${port} (ECONNREFUSED)`);
    const log = await app.store.readEvents(failed["id"], 0);
    expect(log.find((e) => e.type === "run.failed")?.payload).toMatchObject({
      error: { code: "external_call_failed" },
    });
  });

  it("the gRPC target passes the egress guard: a private target is refused even with the loopback allowance", async () => {
    for (const target of ["10.0.0.5:50051", "https://10.0.0.5:50051", "grpcs://169.254.169.254"]) {
      const cardUrl = await staticCard(
        { name: "Private", url: target, preferredTransport: "GRPC", protocolVersion: "0.3" },
        servers,
      );
      const app = await startTestApp({ ...env, A2A_PEER_CARD_URL: cardUrl });
      apps.push(app);
      const failed = await jsonRpcCaller(() => app.baseUrl).start("scenario:complete", "peer-call");
      expect(openwop(failed)["error"].code, target).toBe("external_call_failed");
      expect(openwop(failed)["error"].message, target).toMatch(
        /refused by the (scheme|address) arm of the egress guard/,
      );
    }
  });

  it("the gRPC connection goes to the address the guard checked (pinned lookup), and h2c needs the test-only allowance", async () => {
    const policy = { allowHttpLoopback: true, allowedPorts: [], allowHosts: [], denyHosts: [] };
    // A name that does not resolve in DNS: the call can only reach the peer through the checked address.
    const resolved: string[] = [];
    const pinned = createGrpcPeerTransport({
      policy,
      versions: peerVersions(),
      requestTimeoutMs: 2000,
      resolve: async (name) => (resolved.push(name), [{ address: "127.0.0.1", family: 4 }]),
    });
    const before = grpcCalls("message/send").length;
    const reply = await pinned.send(`grpc+http://a2a-peer.example:${peer.grpcPort}`, {
      messageId: randomUUID(),
      role: "user",
      parts: [{ kind: "text", text: "scenario:complete" }],
    });
    expect(reply.kind).toBe("task");
    expect(resolved).toEqual(["a2a-peer.example"]);
    expect(grpcCalls("message/send")).toHaveLength(before + 1);

    // grpc+https means TLS, never a silent downgrade: against the plaintext peer the handshake fails (retryable).
    const tls = await pinned
      .getTask(`grpc+https://a2a-peer.example:${peer.grpcPort}`, "tls-probe")
      .catch((err: unknown) => err);
    expect(tls).toBeInstanceOf(PeerCallError);
    expect(tls).toMatchObject({ kind: "connection", retryable: true });
    expect(grpcCalls("tasks/get", "tls-probe")).toEqual([]);
    await pinned.close();

    // Without the allowance, plaintext (and loopback) is refused before anything is sent.
    const strict = createGrpcPeerTransport({
      policy: { ...policy, allowHttpLoopback: false },
      versions: peerVersions(),
      requestTimeoutMs: 2000,
    });
    const refused = await strict.getTask(`grpc+http://127.0.0.1:${peer.grpcPort}`, "any").catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(PeerCallError);
    expect(refused).toMatchObject({ kind: "egress", retryable: false });
    expect(grpcCalls("tasks/get", "any")).toEqual([]);
    await strict.close();
    noJsonRpc();
  });
});
