// How many MongoDB commands a task costs, counted by the driver's command monitoring (a count is
// deterministic, so it is asserted; speed is measured in bench/, never here). The engine stages the
// transitions a task makes with nothing observable or external between them and writes them in one store
// call: created → started → node.started of a pure handler in the create, node.completed → completed in
// one commit, an approval gate's interrupt in the same write as what led to it. A blocking send's new task
// runs its pure handlers before its first write (BLOCKING_FIRST_WRITE_MS), so a fast one is one write.
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient, type CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import type { Message } from "../../src/domain/a2a-types.js";
import type { CommittedTransition } from "../../src/engine/transition-hook.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { RECENT_HISTORY } from "../../src/machine/task-machine.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import type { LeaseFence, TaskRecordChanges, TaskStore } from "../../src/store/task-store.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

const EXTRA = `
id: side-effect
name: Side effect
description: One handler that acts outside the host (not marked pure).
nodes:
  - { kind: task, id: call, handler: notify-outside }
`;

const SLOW = `
id: slow-pure
name: Slow pure
description: A pure handler that takes longer than the first-write window.
nodes:
  - { kind: task, id: think, handler: think-slowly }
`;

/** The window the tests run with; the slow handler takes longer. */
const FIRST_WRITE_MS = 100;

/**
 * MongoDB commands one TaskStore write costs with the current adapter (one client-level bulkWrite: MongoDB 8.0,
 * which the wire-protocol test server speaks; older servers take two). The
 * engine's part, asserted below, is how many TaskStore writes a task makes and which events each carries.
 */
const COMMANDS_PER_WRITE = 1;

/** What the store had written when the side-effect handler ran. */
let writtenWhenRun: string[][] | undefined;
let storeOf: () => CountingStore;
/** A handler with an external effect: not marked pure, so its node.started gets a write of its own. */
const notifyOutside: TaskHandler = async () => {
  writtenWhenRun = storeOf().writes.map((w) => w.events);
  return { output: { notified: true } };
};
/** Pure, but slower than the window: what the store held (and readers saw) while it ran. */
let seenWhileThinking: { writes: string[][]; state: string | undefined } | undefined;
let readWhileThinking: (taskId: string) => Promise<string | undefined>;
const thinkSlowly: TaskHandler = Object.assign(
  async (ctx: Parameters<TaskHandler>[0]) => {
    await new Promise((r) => setTimeout(r, 3 * FIRST_WRITE_MS));
    seenWhileThinking = { writes: storeOf().writes.map((w) => w.events), state: await readWhileThinking(ctx.taskId) };
    return { output: { thought: true } };
  },
  { pure: true },
);

/** The TaskStore port with the commands each of its writes sends, told apart from every other command. */
class CountingStore implements TaskStore {
  readonly kind = "mongodb" as const;
  writes: Array<{ call: "create" | "commit"; commands: string[]; events: string[] }> = [];
  others: string[] = [];
  private current: string[] | undefined;

  constructor(
    private readonly inner: MongoTaskStore,
    client: MongoClient,
  ) {
    client.on("commandStarted", (e: CommandStartedEvent) => (this.current ?? this.others).push(`${e.commandName}`));
  }

  reset(): void {
    this.writes = [];
    this.others = [];
  }

  private async write(call: "create" | "commit", events: RunEvent[], run: () => Promise<void>): Promise<void> {
    // One task at a time in these tests, so every command sent while a write runs belongs to it.
    const entry = { call, commands: [] as string[], events: events.map((e) => e.type) };
    this.writes.push(entry);
    this.current = entry.commands;
    try {
      await run();
    } finally {
      this.current = undefined;
    }
  }

  init = () => this.inner.init();
  create = (record: TaskRecord, events: RunEvent[]) =>
    this.write("create", events, () => this.inner.create(record, events));
  commit = (
    taskId: string,
    expectedVersion: number,
    changes: TaskRecordChanges,
    events: RunEvent[],
    fence?: LeaseFence,
  ) => this.write("commit", events, () => this.inner.commit(taskId, expectedVersion, changes, events, fence));
  get = (taskId: string) => this.inner.get(taskId);
  readEvents = (taskId: string, from: number, limit?: number) => this.inner.readEvents(taskId, from, limit);
  readHistory: TaskStore["readHistory"] = (...args) => this.inner.readHistory(...args);
  findHistoryMessage: TaskStore["findHistoryMessage"] = (...args) => this.inner.findHistoryMessage(...args);
  findByIdempotencyKey = (key: string) => this.inner.findByIdempotencyKey(key);
  list: TaskStore["list"] = (query) => this.inner.list(query);
  listActive = () => this.inner.listActive();
  dueTimers = (now: Date, limit: number) => this.inner.dueTimers(now, limit);
  claimTimer: TaskStore["claimTimer"] = (...args) => this.inner.claimTimer(...args);
  acquireLease: TaskStore["acquireLease"] = (...args) => this.inner.acquireLease(...args);
  renewLeases: TaskStore["renewLeases"] = (...args) => this.inner.renewLeases(...args);
  releaseLease: TaskStore["releaseLease"] = (...args) => this.inner.releaseLease(...args);
  cancellingTaskIds: TaskStore["cancellingTaskIds"] = (...args) => this.inner.cancellingTaskIds(...args);
  leaseableTaskIds: TaskStore["leaseableTaskIds"] = (...args) => this.inner.leaseableTaskIds(...args);
  close = () => this.inner.close();
}

describe(`store commands per task (mongodb: ${inject("mongoBackend")})`, () => {
  const dbName = `commands_${randomUUID().slice(0, 8)}`;
  const ctx: CallContext = { principal: { tenant: "default", id: "alice", scopes: "*" } };
  let client: MongoClient;
  let store: CountingStore;
  let t: TestCore;
  const published: CommittedTransition[] = [];

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"), { monitorCommands: true });
    store = new CountingStore(new MongoTaskStore(client, client.db(dbName)), client);
    storeOf = () => store;
    await store.init();
    const dir = await mkdtemp(join(tmpdir(), "commands-"));
    await writeFile(join(dir, "side-effect.yaml"), EXTRA);
    await writeFile(join(dir, "slow-pure.yaml"), SLOW);
    // No push worker, and the durable timer scheduler polls once a minute (the most the config allows), so
    // every command counted here is one the task itself caused.
    t = await startTestCore(
      {
        WORKFLOWS_DIR: dir,
        BLOCKING_TIMEOUT_MS: "10000",
        BLOCKING_FIRST_WRITE_MS: String(FIRST_WRITE_MS),
        PUSH_ENABLED: "false",
        TIMER_POLL_MS: "60000",
        LEASE_HEARTBEAT_MS: "60000",
        LEASE_TTL_MS: "600000",
      },
      { store, handlers: { "notify-outside": notifyOutside, "think-slowly": thinkSlowly } },
    );
    readWhileThinking = async (taskId) =>
      (await t.core.service.getTask(taskId, undefined, ctx).catch(() => undefined))?.status.state;
    t.core.hook.onAny((transition) => published.push(transition));
  });
  afterAll(async () => {
    await t?.close();
    await client.db(dbName).dropDatabase();
    await client.close();
  });
  beforeEach(() => {
    store.reset();
    published.length = 0;
  });

  const message = (skillId: string): Message => ({
    messageId: randomUUID(),
    role: "user",
    parts: [{ kind: "text", text: "hello" }],
    metadata: { skillId },
  });
  const send = (skillId: string, blocking = true) =>
    t.core.service.sendMessage({ message: message(skillId), blocking }, ctx);

  const writes = () => store.writes.map(({ call, events }) => ({ call, events }));
  const expectCommandsPerWrite = () => {
    for (const write of store.writes) expect(write.commands).toHaveLength(COMMANDS_PER_WRITE);
  };

  /** Every published event of the task, in publish order: gap-free from 0, as stored. */
  async function expectLogIntact(taskId: string): Promise<void> {
    const seen = published.filter((p) => p.record.taskId === taskId).flatMap((p) => p.events.map((e) => e.sequence));
    expect(seen).toEqual(seen.map((_, i) => i));
    const stored = await t.core.reads.readEvents(taskId, 0);
    expect(stored.map((e) => e.sequence)).toEqual(seen);
  }

  it("echo, blocking: one write (the create, holding the whole run), one command", async () => {
    const task = await send("echo");
    expect(task.status.state).toBe("completed");
    expect(writes()).toEqual([
      {
        call: "create",
        events: ["run.created", "run.started", "node.started", "node.completed", "artifact.created", "run.completed"],
      },
    ]);
    expectCommandsPerWrite();
    // Nothing besides the write: the messageId check is the create itself (a unique index on the idempotency
    // key), and the answer is the task as written (no read to wait for it), so an echo task costs 1 command.
    expect(store.others).toEqual([]);
    expect(store.writes.flatMap((w) => w.commands).length + store.others.length).toBe(COMMANDS_PER_WRITE);
    expect(published.map((p) => p.events.length)).toEqual([6]);
    expect(task.artifacts.map((a) => a.artifactId)).toEqual(["echo.0"]);
    await expectLogIntact(task.id);
  });

  it("echo, not blocking: the acknowledged create first, then node.completed with completed", async () => {
    const task = await send("echo", false);
    expect(task.status.state).not.toBe("completed");
    await t.core.observer.waitUntil({
      taskId: task.id,
      tenant: "default",
      start: await t.core.reads.get(task.id, "default"),
      until: (r) => r.a2a.state === "completed",
      timeoutMs: 5000,
    });
    expect(writes()).toEqual([
      { call: "create", events: ["run.created", "run.started", "node.started"] },
      { call: "commit", events: ["node.completed", "artifact.created", "run.completed"] },
    ]);
    await expectLogIntact(task.id);
  });

  it("approval gate up to the wait, blocking: one write (the proposal and the interrupt ride with the create)", async () => {
    const task = await send("approval-gate");
    expect(task.status.state).toBe("input-required");
    expect(writes()).toEqual([
      {
        call: "create",
        events: [
          "run.created",
          "run.started",
          "node.started",
          "node.completed",
          "artifact.created",
          "node.suspended",
          "interrupt.requested",
          "approval.requested",
        ],
      },
    ]);
    expectCommandsPerWrite();
    expect(store.others).toEqual([]);
    await expectLogIntact(task.id);
  });

  it("a pure handler slower than the window: the task is written as it stands when the window ends, readable while the handler runs", async () => {
    seenWhileThinking = undefined;
    const task = await send("slow-pure");
    expect(task.status.state).toBe("completed");
    expect(seenWhileThinking).toEqual({ writes: [["run.created", "run.started", "node.started"]], state: "working" });
    expect(writes()).toEqual([
      { call: "create", events: ["run.created", "run.started", "node.started"] },
      { call: "commit", events: ["node.completed", "run.completed"] },
    ]);
    await expectLogIntact(task.id);
  });

  it("a gate as the first node: created → started → waiting in the create", async () => {
    const task = await send("conformance-approval");
    expect(task.status.state).toBe("input-required");
    expect(writes()).toEqual([
      {
        call: "create",
        events: ["run.created", "run.started", "node.suspended", "interrupt.requested", "approval.requested"],
      },
    ]);
    expectCommandsPerWrite();
    await expectLogIntact(task.id);
  });

  it("a conversation longer than the head's window: reading all of it is one more command (the log), the newest part none", async () => {
    const task = await send("approval-gate");
    const reply = (i: number) =>
      t.core.service.sendMessage(
        {
          message: {
            messageId: `ask-${task.id}-${i}`,
            role: "user",
            taskId: task.id,
            contextId: task.contextId,
            parts: [{ kind: "data", data: { action: "ask", question: `why ${i}?` } }],
          },
          blocking: true,
          history: 2,
        },
        ctx,
      );
    // Commands on the log's collection (the head's own reads depend on whether the task is held in memory).
    let logCommands: string[] = [];
    const onCommand = (e: CommandStartedEvent) => {
      if (e.command[e.commandName] === "task_events" && e.commandName !== "getMore") logCommands.push(e.commandName);
    };
    client.on("commandStarted", onCommand);
    const commandsOf = async <T>(work: () => Promise<T>): Promise<{ result: T; commands: string[] }> => {
      store.reset();
      logCommands = [];
      const result = await work();
      return { result, commands: logCommands };
    };
    expect((await t.core.service.getTask(task.id, undefined, ctx)).history).toHaveLength(2);
    // Each "ask" adds the question and the agent's answer; the head keeps the newest RECENT_HISTORY of them.
    const replies = RECENT_HISTORY;
    for (let i = 0; i < replies; i++)
      expect((await reply(i)).history.map((m) => m.messageId)).toEqual([`ask-${task.id}-${i}`, expect.any(String)]);
    const all = await commandsOf(() => t.core.service.getTask(task.id, undefined, ctx));
    expect(all.result.history).toHaveLength(2 + 2 * replies);
    expect(all.result.history[0]!.parts).toEqual(message("approval-gate").parts);
    expect(
      all.result.history
        .filter((m) => m.role === "user")
        .map((m) => m.messageId)
        .slice(1),
    ).toEqual(Array.from({ length: replies }, (_, i) => `ask-${task.id}-${i}`));
    // The newest messages come from the head alone; reaching further back is one read of the log.
    const recent = await commandsOf(() => t.core.service.getTask(task.id, RECENT_HISTORY, ctx));
    expect(recent.result.history).toEqual(all.result.history.slice(-RECENT_HISTORY));
    expect(recent.commands).toEqual([]);
    expect(all.commands).toEqual(["find"]);
    // A retry of a message that left the head's window long ago is still recognised: nothing is written.
    const version = (await t.core.reads.get(task.id, "default")).version;
    const retried = await commandsOf(() => reply(0));
    expect(retried.result.status.state).toBe("input-required");
    expect((await t.core.reads.get(task.id, "default")).version).toBe(version);
    expect(store.writes).toEqual([]);
    expect(retried.commands).toEqual(["find"]);
    client.off("commandStarted", onCommand);
  });

  it("a handler with side effects: its node.started is written alone, before it runs", async () => {
    const task = await send("side-effect");
    expect(task.status.state).toBe("completed");
    expect(store.writes.map((w) => w.events)).toEqual([
      ["run.created", "run.started"],
      ["node.started"],
      ["node.completed", "run.completed"],
    ]);
    expectCommandsPerWrite();
    expect(writtenWhenRun).toEqual([["run.created", "run.started"], ["node.started"]]);
    await expectLogIntact(task.id);
  });
});
