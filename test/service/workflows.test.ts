import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import type { Message, Task } from "../../src/domain/a2a-types.js";
import { DomainError } from "../../src/domain/errors.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

const EXTRA = {
  "timed-gate.yaml": `
id: timed-gate
name: Timed gate
description: An approval gate that auto-rejects after one second.
nodes:
  - { kind: approval, id: gate, title: Decide quickly, timeoutMs: 1000 }
  - { kind: task, id: done, handler: noop }
`,
  "failing.yaml": `
id: failing
name: Failing
description: A handler that throws.
nodes:
  - { kind: task, id: boom, handler: fail, params: { code: "upstream_down", message: "the upstream is down" } }
`,
  "delayed-echo.yaml": `
id: delayed-echo
name: Delayed echo
description: Waits on a durable timer, then echoes.
nodes:
  - { kind: delay, id: wait, durationMs: 300 }
  - { kind: task, id: echo, handler: echo }
`,
};

describe("workflows through the A2A service", () => {
  let t: TestCore;
  const ctx: CallContext = { principal: { tenant: "default", id: "alice", scopes: "*" } };

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), "workflows-"));
    for (const [name, body] of Object.entries(EXTRA)) await writeFile(join(dir, name), body);
    t = await startTestCore({ WORKFLOWS_DIR: dir, BLOCKING_TIMEOUT_MS: "5000" });
  });
  afterAll(() => t.close());

  const msg = (text: string, skillId?: string): Message => ({
    messageId: randomUUID(),
    role: "user",
    parts: [{ kind: "text", text }],
    ...(skillId ? { metadata: { skillId } } : {}),
  });
  const data = (taskId: string, value: Record<string, unknown>): Message => ({
    messageId: randomUUID(),
    role: "user",
    taskId,
    parts: [{ kind: "data", data: value }],
  });
  const send = (message: Message) => t.core.service.sendMessage({ message, blocking: true }, ctx);
  const interrupt = (task: Task) =>
    (task.metadata["openwop"] as { interrupt?: { kind: string; nodeId: string } }).interrupt;
  const artifactText = (task: Task, name: string) => {
    const part = task.artifacts.find((a) => a.name === name)?.parts[0];
    return part?.kind === "text" ? part.text : undefined;
  };

  it("campaign-brief: two gates, a refine loop, artifacts", async () => {
    let task = await send(msg("Aurora headphones", "campaign-brief"));
    expect(task.status.state).toBe("input-required");
    expect(interrupt(task)).toMatchObject({ kind: "approval", nodeId: "review-brief" });
    task = await send(
      data(task.id, { action: "refine", refineFeedback: { scope: "whole", text: "mention the battery life" } }),
    );
    expect(interrupt(task)?.nodeId).toBe("review-brief");
    expect(artifactText(task, "brief")).toContain("mention the battery life");
    task = await send(data(task.id, { action: "accept" }));
    expect(interrupt(task)?.nodeId).toBe("final-signoff");
    task = await send(data(task.id, { action: "edit-accept", editedArtifactData: "Week 1: launch event" }));
    expect(task.status.state).toBe("completed");
    expect(artifactText(task, "channel-plan")).toBe("Week 1: launch event");
    expect(task.artifacts.map((a) => a.name)).toEqual(["brief", "channel-plan", "campaign"]);
    const log = await t.store.readEvents(task.id, 0);
    expect(log.filter((e) => e.type === "node.started" && e.nodeId === "draft")).toHaveLength(2);
    const received = log
      .filter((e) => e.type === "approval.received")
      .map((e) => [e.payload["action"], e.payload["decidedBy"]]);
    expect(received).toEqual([
      ["refine", "alice"],
      ["accept", "alice"],
      ["edit-accept", "alice"],
    ]);
  });

  it("approval ask does not end the wait", async () => {
    let task = await send(msg("Ask first", "approval-gate"));
    task = await send(data(task.id, { action: "ask", question: "What does it cost?" }));
    expect(task.status.state).toBe("input-required");
    expect(interrupt(task)?.nodeId).toBe("gate");
    expect((interrupt(task) as unknown as { exchanges: unknown[] }).exchanges).toHaveLength(1);
    task = await send(data(task.id, { action: "accept" }));
    expect(task.status.state).toBe("completed");
  });

  it("a reject fails the run in one commit with approval_rejected", async () => {
    let task = await send(msg("No way", "approval-gate"));
    task = await send(data(task.id, { action: "reject", feedback: "not now" }));
    expect(task.status.state).toBe("failed");
    expect((task.metadata["openwop"] as { error: { code: string } }).error.code).toBe("approval_rejected");
    const log = await t.store.readEvents(task.id, 0);
    expect(log.at(-1)?.type).toBe("run.failed");
    expect(log.filter((e) => e.type === "node.started" && e.nodeId === "finalize")).toHaveLength(0);
  });

  it("clarify: asks a question and uses the answer", async () => {
    let task = await send(msg("New office hours", "clarify"));
    expect(task.status.state).toBe("input-required");
    expect(interrupt(task)?.kind).toBe("clarification");
    expect(task.status.message?.parts[0]).toMatchObject({ kind: "text" });
    task = await send({
      messageId: randomUUID(),
      role: "user",
      taskId: task.id,
      parts: [{ kind: "text", text: "night-shift nurses" }],
    });
    expect(task.status.state).toBe("completed");
    expect(artifactText(task, "message")).toBe("Message for night-shift nurses: New office hours");
  });

  it("a handler that throws fails the task with its code, not the process", async () => {
    const task = await send(msg("x", "failing"));
    expect(task.status.state).toBe("failed");
    expect((task.metadata["openwop"] as { error: { code: string; message: string } }).error).toEqual({
      code: "upstream_down",
      message: "the upstream is down",
    });
  });

  it("an approval gate that times out is auto-rejected by the durable timer", async () => {
    const task = await send(msg("slow decision", "timed-gate"));
    expect(task.status.state).toBe("input-required");
    const deadline = Date.now() + 5000;
    let current = task;
    while (current.status.state === "input-required" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      current = await t.core.service.getTask(task.id, undefined, ctx);
    }
    expect(current.status.state).toBe("failed");
    expect((current.metadata["openwop"] as { error: { code: string } }).error.code).toBe("approval_timeout");
    const log = await t.store.readEvents(task.id, 0);
    expect(log.find((e) => e.type === "approval.received")?.payload).toMatchObject({
      action: "timeout",
      decidedBy: "system:timeout",
    });
  });

  it("a delay node waits on a durable timer and the task is passivated meanwhile", async () => {
    const task = await t.core.service.sendMessage({ message: msg("later", "delayed-echo"), blocking: false }, ctx);
    await new Promise((r) => setTimeout(r, 100));
    expect(t.core.supervisor.liveTaskCount()).toBe(0);
    const record = await t.store.get(task.id);
    expect(record?.timerDueAt).toBeTruthy();
    const done = await t.core.service
      .sendMessage({ message: data(task.id, {}), blocking: true }, ctx)
      .catch((e: unknown) => e);
    expect(done).toBeInstanceOf(DomainError);
    const deadline = Date.now() + 5000;
    let current = await t.core.service.getTask(task.id, undefined, ctx);
    while (current.status.state !== "completed" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      current = await t.core.service.getTask(task.id, undefined, ctx);
    }
    expect(current.status.state).toBe("completed");
    expect((await t.store.get(task.id))?.timerDueAt).toBeNull();
  });

  it("waiting tasks hold no actor in memory", async () => {
    await send(msg("park it", "approval-gate"));
    // The driver passivates right after the interrupt commit the blocking send returned on.
    for (let i = 0; i < 50 && t.core.supervisor.liveTaskCount() > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(t.core.supervisor.liveTaskCount()).toBe(0);
  });

  it("cancels a running handler and ends in canceled", async () => {
    const task = await t.core.service.sendMessage(
      { message: msg("long", "conformance-cancellable"), blocking: false },
      ctx,
    );
    await new Promise((r) => setTimeout(r, 100));
    expect((await t.core.service.getTask(task.id, undefined, ctx)).status.state).toBe("working");
    const cancelled = await t.core.service.cancelTask(task.id, ctx);
    expect(cancelled.status.state).toBe("canceled");
    const log = await t.store.readEvents(task.id, 0);
    expect(log.map((e) => e.type).slice(-2)).toEqual(["run.cancelling", "run.cancelled"]);
    expect(log.some((e) => e.type === "node.completed")).toBe(false);
  });

  it("a task of another tenant reads as not found", async () => {
    const task = await send(msg("mine"));
    const other: CallContext = { principal: { tenant: "other", id: "mallory", scopes: "*" } };
    await expect(t.core.service.getTask(task.id, undefined, other)).rejects.toMatchObject({ code: "task-not-found" });
    await expect(t.core.service.cancelTask(task.id, other)).rejects.toMatchObject({ code: "task-not-found" });
  });

  it("every persisted A2ATaskState validates and holds no content", async () => {
    const { validateA2ATaskState } = await import("../../src/schemas/schema-validator.js");
    for (const skill of ["echo", "approval-gate", "clarify", "failing"]) {
      const task = await send(msg("secret input text", skill));
      const state = await t.core.service.getA2ATaskState(task.id, ctx);
      validateA2ATaskState(state);
      expect(JSON.stringify(state)).not.toContain("secret input text");
    }
  });
});
