// Fair work on an instance (issue 42 item 2, docs/operating.md "Fair work"), through the real server: tenant A
// (API key alice, tenant acme) queues a backlog of node work far past WORK_CONCURRENCY; tenant B (bob, globex)
// sends one task after it. B's node runs within one turn of A's (the round robin), not after A's backlog, and the
// wait is on /metrics as openwop_work_queue_delay_seconds by tenant.
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const ALICE = "alice-key-0123456789abcdef0123456789";
const BOB = "bob-key-0123456789abcdef0123456789abc";
const BACKLOG = 20;
const CONCURRENCY = 2;

describe("fair work: one tenant's backlog does not starve another's ready work", () => {
  let t: TestApp;
  /** Node executions in the order they started: `<tenant>:<taskId>`. */
  const started: string[] = [];
  /** Releases of the held executions, by task. */
  const releases = new Map<string, () => void>();
  const held: TaskHandler = (ctx) =>
    new Promise((resolve) => {
      started.push(`acme:${ctx.taskId}`);
      releases.set(ctx.taskId, () => resolve({ output: { ok: true } }));
    });
  const quick: TaskHandler = async (ctx) => {
    started.push(`globex:${ctx.taskId}`);
    return { output: { ok: true } };
  };

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), "fair-work-"));
    await writeFile(
      join(dir, "held.yaml"),
      "id: held\nname: Held\ndescription: work the test releases\nnodes:\n  - { kind: task, id: work, handler: held }\n",
    );
    await writeFile(
      join(dir, "quick.yaml"),
      "id: quick\nname: Quick\ndescription: short work\nnodes:\n  - { kind: task, id: work, handler: quick }\n",
    );
    t = await startTestApp(
      {
        WORKFLOWS_DIR: dir,
        BUILTIN_WORKFLOWS: "demo",
        WORK_CONCURRENCY: String(CONCURRENCY),
        API_KEYS: JSON.stringify([
          { id: "alice", tenant: "acme", scopes: ["runs:create", "runs:read"], key: ALICE },
          { id: "bob", tenant: "globex", scopes: ["runs:create", "runs:read"], key: BOB },
        ]),
      },
      undefined,
      { held, quick },
    );
  });
  afterAll(async () => {
    for (const release of releases.values()) release();
    await t?.close();
  });

  async function send(key: string, skillId: string): Promise<string> {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            role: "user",
            messageId: randomUUID(),
            parts: [{ kind: "text", text: "go" }],
            metadata: { skillId },
          },
          configuration: { blocking: false },
        },
      }),
    });
    const body = (await res.json()) as { result?: { id: string }; error?: unknown };
    expect(body.error).toBeUndefined();
    return body.result!.id;
  }
  async function until(check: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  const startedOf = (tenant: string) => started.filter((s) => s.startsWith(`${tenant}:`)).length;

  it("runs B's node within one turn of A's while A's backlog waits, and reports each tenant's queue delay", async () => {
    const backlog: string[] = [];
    for (let i = 0; i < BACKLOG; i++) backlog.push(await send(ALICE, "held"));
    await until(() => startedOf("acme") === CONCURRENCY, "A's first executions");
    await new Promise((r) => setTimeout(r, 100));
    expect(startedOf("acme")).toBe(CONCURRENCY); // the rest of A's backlog waits for a slot
    const bTask = await send(BOB, "quick");
    await new Promise((r) => setTimeout(r, 100));
    expect(startedOf("globex")).toBe(0); // every slot is A's

    // Free A's slots one at a time: A's turn, then B's, so B runs after at most two of A's, not after nineteen.
    let freed = 0;
    while (startedOf("globex") === 0) {
      const next = started.find((s) => s.startsWith("acme:") && releases.has(s.slice(5)));
      const taskId = next!.slice(5);
      const before = started.length;
      releases.get(taskId)!();
      releases.delete(taskId);
      freed++;
      await until(() => started.length > before, "the next admission");
      expect(freed).toBeLessThanOrEqual(2);
    }
    // In order: A's two, one more of A's (A's turn), then B's; A's backlog is still there.
    expect(started.findIndex((s) => s.startsWith("globex:"))).toBe(CONCURRENCY + 1);
    expect(BACKLOG - startedOf("acme")).toBeGreaterThanOrEqual(BACKLOG - CONCURRENCY - 2);
    const bState = async () =>
      (
        (await (
          await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${BOB}` },
            body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: bTask } }),
          })
        ).json()) as { result: { status: { state: string } } }
      ).result.status.state;
    let state = await bState();
    for (let i = 0; i < 100 && state !== "completed"; i++) {
      await new Promise((r) => setTimeout(r, 20));
      state = await bState();
    }
    expect(state).toBe("completed");

    // The rest of A's backlog goes on.
    while (startedOf("acme") < BACKLOG) {
      for (const [taskId, release] of [...releases]) {
        release();
        releases.delete(taskId);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    for (const release of releases.values()) release();
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    const count = (tenant: string) =>
      Number(
        new RegExp(`openwop_work_queue_delay_seconds_count\\{[^}]*tenant="${tenant}"[^}]*\\} (\\d+)`).exec(
          metrics,
        )?.[1],
      );
    expect(count("acme")).toBe(BACKLOG);
    expect(count("globex")).toBe(1);
  });
});
