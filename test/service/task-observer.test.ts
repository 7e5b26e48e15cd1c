import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import type { RunEvent } from "../../src/domain/task-record.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

const STEPS = `
id: steps
name: Steps
description: A short wait, then several steps in a row.
nodes:
  - { kind: delay, id: wait, durationMs: 150 }
  - { kind: task, id: a, handler: echo }
  - { kind: task, id: b, handler: echo }
  - { kind: task, id: c, handler: echo }
`;

describe("the task observer", () => {
  let t: TestCore;
  const ctx: CallContext = { principal: { tenant: "default", id: "alice", scopes: "*" } };
  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), "observer-"));
    await writeFile(join(dir, "steps.yaml"), STEPS);
    t = await startTestCore({ SUBSCRIBER_BUFFER: "1", WORKFLOWS_DIR: dir });
  });
  afterAll(() => t.close());

  const start = async (skillId: string) => {
    const task = await t.core.service.sendMessage(
      {
        message: { messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "x" }], metadata: { skillId } },
        blocking: false,
      },
      ctx,
    );
    return t.core.reads.get(task.id, "default");
  };

  it("follow with catch-up: a follower far behind its buffer still gets every event once, in order, to the end", async () => {
    const record = await start("steps");
    const seen: RunEvent[] = [];
    for await (const event of t.core.observer.follow(record, 0, { onOverflow: "catch-up" })) {
      seen.push(event);
      await new Promise((r) => setTimeout(r, 20)); // slower than the commits: the buffer of 1 overflows
    }
    expect(seen.map((e) => e.sequence)).toEqual(seen.map((_, i) => i));
    expect(seen.at(-1)?.type).toBe("run.completed");
    expect(seen).toEqual(await t.store.readEvents(record.taskId, 0));
  });

  it("follow from past the end of a finished run ends at once", async () => {
    const record = await start("echo");
    const done = await t.core.observer.waitUntil({
      taskId: record.taskId,
      tenant: "default",
      until: (r) => r.status === "completed",
      timeoutMs: 5000,
    });
    expect(done.status).toBe("completed");
    const rest: RunEvent[] = [];
    for await (const event of t.core.observer.follow(done, done.version + 1, { onOverflow: "drop" })) rest.push(event);
    expect(rest).toEqual([]);
  });

  it("waitUntil answers the latest committed record when the condition does not come in time", async () => {
    const record = await start("approval-gate");
    const latest = await t.core.observer.waitUntil({
      taskId: record.taskId,
      tenant: "default",
      start: record,
      until: () => false,
      timeoutMs: 300,
    });
    expect(latest.status).toBe("waiting-approval");
    expect(latest.version).toBe((await t.core.reads.get(record.taskId, "default")).version);
  });
});
