import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

const BUSY = `
id: busy
name: Busy
description: A short wait, then several steps in a row (one store write each, node.started riding with the previous completion), then an approval gate.
nodes:
  - { kind: delay, id: wait, durationMs: 200 }
  - { kind: task, id: a, handler: echo }
  - { kind: task, id: b, handler: echo }
  - { kind: task, id: c, handler: echo }
  - { kind: task, id: d, handler: echo }
  - { kind: task, id: e, handler: echo }
  - { kind: approval, id: gate, title: Check }
`;

describe("a slow subscriber", () => {
  let t: TestCore;
  const ctx: CallContext = { principal: { tenant: "default", id: "alice", scopes: "*" } };
  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), "wf-"));
    await writeFile(join(dir, "busy.yaml"), BUSY);
    t = await startTestCore({ SUBSCRIBER_BUFFER: "2", WORKFLOWS_DIR: dir });
  });
  afterAll(() => t.close());

  it("is dropped with a clear error while the task and a fast subscriber carry on", async () => {
    const task = await t.core.service.sendMessage(
      {
        message: {
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: "x" }],
          metadata: { skillId: "busy" },
        },
        blocking: false,
      },
      ctx,
    );
    const slow = t.core.service.subscribe(task.id, ctx);
    expect((await slow.next()).value?.kind).toBe("task");
    const slowNext = slow.next(); // reads one update, then stops reading
    const fast = (async () => {
      const seen: string[] = [];
      for await (const e of t.core.service.subscribe(task.id, ctx)) {
        seen.push(e.kind === "status-update" ? e.status.state : e.kind);
        // A subscription stays open through an interrupt (final: false); this one stops watching there.
        if (e.kind === "status-update" && e.status.state === "input-required") {
          expect(e.final).toBe(false);
          break;
        }
      }
      return seen;
    })();
    const seen = await fast;
    expect(seen[0]).toBe("task");
    expect(seen.at(-1)).toBe("input-required");
    expect(seen.filter((k) => k === "artifact-update")).toHaveLength(5);
    await slowNext;
    await expect(slow.next()).rejects.toThrow(/fell more than 2 updates behind.*resubscribe/);
    expect((await t.core.service.getTask(task.id, undefined, ctx)).status.state).toBe("input-required");
  });
});
