import { randomUUID } from "node:crypto";
import { LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPENWOP_EXTENSION_URI } from "../../src/app.js";
import { readSse, type SseFrame } from "../support/sse.js";
import { startTestApp, type TestApp, TEST_WORKFLOWS_DIR } from "../support/start-server.js";

type Rpc = { jsonrpc: string; id: unknown; result?: Record<string, any>; error?: { code: number; message: string } };

describe("A2A v0.3 JSON-RPC binding", () => {
  let t: TestApp;
  let endpoint: string;

  beforeAll(async () => {
    t = await startTestApp({ WORKFLOWS_DIR: TEST_WORKFLOWS_DIR, MAX_BODY_BYTES: "4096" });
    endpoint = `${t.baseUrl}/a2a/jsonrpc`;
  });
  afterAll(() => t.close());

  const rpc = async (method: string, params: unknown, id: unknown = randomUUID()): Promise<Rpc> => {
    const res = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Rpc;
  };
  const message = (text: string, extra: Record<string, unknown> = {}) => ({
    kind: "message",
    messageId: randomUUID(),
    role: "user",
    parts: [{ kind: "text", text }],
    ...extra,
  });
  const reply = (taskId: string, data: Record<string, unknown>) => ({
    kind: "message",
    messageId: randomUUID(),
    role: "user",
    taskId,
    parts: [{ kind: "data", data }],
  });
  const stream = async (
    method: string,
    params: unknown,
    id = randomUUID(),
    until?: (f: SseFrame) => boolean | void,
  ) => {
    const res = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    return readSse(res, until);
  };
  const results = (frames: SseFrame[]) => frames.map((f) => (f.data as Rpc).result!);

  it("serves the card with the JSON-RPC url as preferred transport", async () => {
    const card = (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as Record<string, any>;
    expect(card["url"]).toBe(endpoint);
    expect(card["preferredTransport"]).toBe("JSONRPC");
    expect(card["additionalInterfaces"]).toContainEqual({ url: endpoint, transport: "JSONRPC" });
    expect(card["skills"].map((s: { id: string }) => s.id)).toEqual(
      expect.arrayContaining(["echo", "approval-gate", "campaign-brief", "clarify"]),
    );
  });

  it("message/send with the SDK client completes the echo skill", async () => {
    const client = new LegacyJsonRpcTransport({ endpoint });
    const result = await client.sendMessage({
      tenant: "",
      message: {
        messageId: randomUUID(),
        contextId: "",
        taskId: "",
        role: 1,
        parts: [{ content: { $case: "text", value: "hello" }, metadata: undefined, filename: "", mediaType: "" }],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    });
    const task = "status" in result ? result : undefined;
    expect(task?.status?.state).toBe(3);
    expect(task?.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: "hello" });
  });

  it("streams Task first, then ordered updates, closing with final:true at the approval gate", async () => {
    const id = randomUUID();
    const frames = await stream(
      "message/stream",
      { message: message("Ship it", { metadata: { skillId: "approval-gate" } }) },
      id,
    );
    expect(frames.every((f) => (f.data as Rpc).id === id && (f.data as Rpc).jsonrpc === "2.0")).toBe(true);
    const events = results(frames);
    expect(events[0]!["kind"]).toBe("task");
    expect(events[0]!["status"].state).toBe("submitted");
    const states = events.filter((e) => e["kind"] === "status-update").map((e) => e["status"].state);
    expect(states).toEqual(["working", "input-required"]);
    expect(events.filter((e) => e["kind"] === "artifact-update").map((e) => e["artifact"].name)).toEqual(["proposal"]);
    const last = events.at(-1)!;
    expect(last["final"]).toBe(true);
    expect(last["metadata"].openwop.interrupt.kind).toBe("approval");
    expect(events.slice(0, -1).every((e) => e["final"] !== true)).toBe(true);
  });

  it("resubscribes after a dropped stream without re-running anything; the stream stays open through the interrupt and ends at completed", async () => {
    const frames = await stream(
      "message/stream",
      { message: message("Slow one", { metadata: { skillId: "slow-approval" } }) },
      randomUUID(),
      () => true,
    );
    const taskId = (frames[0]!.data as Rpc).result!["id"] as string;
    let replied: Promise<Rpc> | undefined;
    const resubscribed = results(
      await stream("tasks/resubscribe", { id: taskId }, randomUUID(), (f) => {
        // Reply once the re-attached stream shows the task waiting; the same stream then watches it finish.
        const r = (f.data as Rpc).result!;
        if (!replied && r["status"]?.state === "input-required")
          replied = rpc("message/send", { message: reply(taskId, { action: "accept" }) });
      }),
    );
    expect(resubscribed[0]!["kind"]).toBe("task");
    expect(resubscribed[0]!["id"]).toBe(taskId);
    const waiting = resubscribed.find((e) => e["kind"] === "status-update" && e["status"].state === "input-required");
    if (waiting) expect(waiting["final"]).toBe(false);
    expect(resubscribed.filter((e) => e["final"] === true)).toHaveLength(1);
    expect(resubscribed.at(-1)).toMatchObject({ kind: "status-update", final: true, status: { state: "completed" } });
    const done = await replied!;
    expect(done.result!["id"]).toBe(taskId);
    const log = await t.store.readEvents(taskId, 0);
    expect(log.filter((e) => e.type === "run.started")).toHaveLength(1);
    expect(log.filter((e) => e.type === "node.started" && e.nodeId === "prepare")).toHaveLength(1);
    expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
  });

  it("gives concurrent subscribers identical events, the first one (with its interrupt token) included", async () => {
    const created = await rpc("message/send", {
      message: message("Watch me", { metadata: { skillId: "approval-gate" } }),
    });
    const taskId = created.result!["id"] as string;
    expect(created.result!["status"].state).toBe("input-required");
    let seen = 0;
    let replied: Promise<Rpc> | undefined;
    const onFirst = () => {
      // Both streams hold the waiting task: one reply, both watch it complete.
      if (++seen === 2) replied = rpc("message/send", { message: reply(taskId, { action: "accept" }) });
    };
    const watch = () =>
      stream(
        "tasks/resubscribe",
        { id: taskId },
        randomUUID(),
        (f) => void ((f.data as Rpc).result!["kind"] === "task" && onFirst()),
      );
    const [a, b] = await Promise.all([watch(), watch()]);
    await replied;
    expect(results(a)[0]!["metadata"].openwop.interruptToken).toEqual(expect.any(String));
    expect(results(a)).toEqual(results(b));
    expect(results(a).at(-1)).toMatchObject({ final: true, status: { state: "completed" } });
    // Repeated reads of the waiting task were identical too (the token is minted once per interrupt).
    expect(results(a)[0]!["metadata"].openwop.interruptToken).toBe(created.result!["metadata"].openwop.interruptToken);
  });

  it("tasks/resubscribe to a terminal task returns the Task and closes", async () => {
    const done = await rpc("message/send", { message: message("x") });
    const events = results(await stream("tasks/resubscribe", { id: done.result!["id"] }));
    expect(events).toHaveLength(1);
    expect(events[0]!["status"].state).toBe("completed");
  });

  it("tasks/get honours historyLength (absent or 0 = all)", async () => {
    const done = await rpc("message/send", { message: message("history") });
    const id = done.result!["id"];
    const all = await rpc("tasks/get", { id });
    const zero = await rpc("tasks/get", { id, historyLength: 0 });
    const one = await rpc("tasks/get", { id, historyLength: 1 });
    expect(all.result!["history"].length).toBeGreaterThanOrEqual(1);
    expect(zero.result!["history"]).toEqual(all.result!["history"]);
    expect(one.result!["history"]).toHaveLength(1);
  });

  it("cancels a task waiting for input and refuses to cancel a terminal one", async () => {
    const waiting = await rpc("message/send", {
      message: message("cancel me", { metadata: { skillId: "approval-gate" } }),
    });
    expect(waiting.result!["status"].state).toBe("input-required");
    const cancelled = await rpc("tasks/cancel", { id: waiting.result!["id"] });
    expect(cancelled.result!["status"].state).toBe("canceled");
    const again = await rpc("tasks/cancel", { id: waiting.result!["id"] });
    expect(again.error?.code).toBe(-32002);
  });

  it("answers the A2A error codes for task problems", async () => {
    const unknown = await rpc("tasks/get", { id: "no-such-task" });
    expect(unknown.error?.code).toBe(-32001);
    expect(unknown.error?.message.toLowerCase()).toContain("task not found");
    const done = await rpc("message/send", { message: message("finished") });
    const toTerminal = await rpc("message/send", { message: reply(done.result!["id"], { action: "accept" }) });
    expect(toTerminal.error?.code).toBe(-32004);
    expect(toTerminal.error?.message).toContain("not supported");
    const waiting = await rpc("message/send", { message: message("ctx", { metadata: { skillId: "approval-gate" } }) });
    const mismatched = await rpc("message/send", {
      message: { ...reply(waiting.result!["id"], { action: "accept" }), contextId: "other" },
    });
    expect(mismatched.error?.code).toBe(-32602);
    const badAction = await rpc("message/send", { message: reply(waiting.result!["id"], { action: "approve-ish" }) });
    expect(badAction.error?.code).toBe(-32602);
    expect(badAction.error?.message).toContain("accept, reject, refine, edit-accept, ask");
    const still = await rpc("tasks/get", { id: waiting.result!["id"] });
    expect(still.result!["status"].state).toBe("input-required");
    const push = await rpc("tasks/pushNotificationConfig/set", {
      taskId: waiting.result!["id"],
      pushNotificationConfig: { url: "https://10.0.0.5/push" },
    });
    expect(push.error?.code).toBe(-32602);
    expect(push.error?.message).toContain("refused by the address arm");
    const resub = await stream("tasks/resubscribe", { id: "missing" });
    expect((resub[0]!.data as Rpc).error?.code).toBe(-32001);
    expect(resub[0]!.event).toBe("error");
  });

  it("echoes the extensions it supports", async () => {
    const res = await fetch(endpoint, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-a2a-extensions": `https://unknown.example/ext, ${OPENWOP_EXTENSION_URI}`,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "nope" } }),
    });
    expect(res.headers.get("x-a2a-extensions")).toBe(OPENWOP_EXTENSION_URI);
  });

  describe("bad input: a clear error, nothing created, server still up", () => {
    const raw = async (body: string, headers: Record<string, string> = { "content-type": "application/json" }) => {
      const res = await fetch(endpoint, { method: "POST", headers, body });
      return { status: res.status, body: (await res.json()) as Rpc };
    };
    const cases: Array<[string, string, number, number, Record<string, string>?]> = [
      ["malformed JSON", "{not json", 200, -32700],
      ["truncated JSON", '{"jsonrpc":"2.0","id":1,"method":"message/se', 200, -32700],
      // No id: answered as if it were null (as the reference SDKs do), here with the params error.
      ["no id", JSON.stringify({ jsonrpc: "2.0", method: "message/send", params: {} }), 200, -32602],
      [
        "wrong jsonrpc",
        JSON.stringify({ jsonrpc: "1.0", id: 1, method: "tasks/get", params: { id: "x" } }),
        200,
        -32600,
      ],
      [
        "object id",
        JSON.stringify({ jsonrpc: "2.0", id: { a: 1 }, method: "tasks/get", params: { id: "x" } }),
        200,
        -32600,
      ],
      ["missing method", JSON.stringify({ jsonrpc: "2.0", id: 1 }), 200, -32600],
      ["batch", JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "tasks/get" }]), 200, -32600],
      ["unknown method", JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/explode", params: {} }), 200, -32601],
      ["missing message", JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: {} }), 200, -32602],
      [
        "empty parts",
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: { message: { messageId: "m", role: "user", parts: [], metadata: { skillId: "approval-gate" } } },
        }),
        200,
        -32602,
      ],
      [
        "wrong role enum",
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: {
              messageId: "m",
              role: "robot",
              parts: [{ kind: "text", text: "x" }],
              metadata: { skillId: "approval-gate" },
            },
          },
        }),
        200,
        -32602,
      ],
      [
        "agent role",
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: {
              messageId: "m",
              role: "agent",
              parts: [{ kind: "text", text: "x" }],
              metadata: { skillId: "approval-gate" },
            },
          },
        }),
        200,
        -32602,
      ],
      [
        "unknown part kind",
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: {
              messageId: "m",
              role: "user",
              parts: [{ kind: "video" }],
              metadata: { skillId: "approval-gate" },
            },
          },
        }),
        200,
        -32602,
      ],
      [
        "unknown skill",
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: {
              messageId: "m",
              role: "user",
              parts: [{ kind: "text", text: "x" }],
              metadata: { skillId: "nope" },
            },
          },
        }),
        200,
        -32602,
      ],
      [
        "negative historyLength",
        JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "x", historyLength: -1 } }),
        200,
        -32602,
      ],
      [
        "wrong content type",
        JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "x" } }),
        415,
        -32600,
        { "content-type": "text/plain" },
      ],
      [
        "oversized body",
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: { message: message("x".repeat(8000), { metadata: { skillId: "approval-gate" } }) },
        }),
        413,
        -32600,
      ],
    ];
    it.each(cases)("%s", async (_name, body, status, code, headers) => {
      const before = (await t.store.listActive()).length;
      const res = await raw(body, headers);
      expect(res.status).toBe(status);
      expect(res.body.error?.code).toBe(code);
      expect(res.body.error?.message.length).toBeGreaterThan(10);
      expect((await t.store.listActive()).length).toBe(before);
      expect((await fetch(`${t.baseUrl}/healthz`)).status).toBe(200);
    });
  });
});
