// Handlers see the conversation: the incoming message whole (file parts by bytes and by URI, data,
// metadata), the contextId, the tasks referenceTaskIds names (same tenant only) and a bounded read of the
// context's earlier tasks, on the durable and the stateless path; and the refine demo end to end over A2A
// 0.3 and 1.0 JSON-RPC.
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Message } from "../../src/domain/a2a-types.js";
import type { ConversationTask, HandlerContext, TaskHandler } from "../../src/workflows/workflow-types.js";
import { MongoClient } from "mongodb";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];
const ALICE = "alice-key-0123456789abcdef";
const BOB = "bob-key-0123456789abcdef";

const WORKFLOWS = {
  "probe.yaml": `
id: probe
name: Probe
description: Records what its handler sees.
nodes:
  - { kind: task, id: look, handler: capture-conversation }
`,
  "probe-interrupt.yaml": `
id: probe-interrupt
name: Probe with a question
description: Records what its handler sees, asks a question, and records again.
nodes:
  - { kind: task, id: before, handler: capture-conversation }
  - { kind: clarification, id: ask, questions: [{ id: more, question: "Anything else?" }] }
  - { kind: task, id: after, handler: capture-conversation }
`,
  "probe-stateless.yaml": `
id: probe-stateless
name: Stateless probe
description: Records what its handler sees, answering with a Message.
stateless: true
nodes:
  - { kind: task, id: look, handler: capture-conversation }
`,
};

interface Seen {
  taskId: string;
  nodeId: string;
  message: Message;
  contextId: string;
  input: HandlerContext["input"];
  referenced: ConversationTask[];
  earlier: ConversationTask[];
}

describe.each(["memory", "mongodb"] as const)("handlers see the conversation (%s store)", (kind) => {
  let t: TestApp;
  const seen: Seen[] = [];
  const capture: TaskHandler = async (ctx) => {
    const limit = ctx.message.metadata?.["limit"];
    seen.push({
      taskId: ctx.taskId,
      nodeId: ctx.nodeId,
      message: ctx.message,
      contextId: ctx.contextId,
      input: ctx.input,
      referenced: await ctx.referencedTasks(),
      earlier: await ctx.contextTasks(typeof limit === "number" ? { limit } : {}),
    });
    const note = ctx.message.parts.find((p) => p.kind === "text");
    return { output: { seen: true }, artifacts: note ? [{ name: "note", parts: [note] }] : [] };
  };
  Object.assign(capture, { pure: true });

  let store: TaskStore;
  let mongo: MongoClient | undefined;
  const dbName = `conversation_${randomUUID().slice(0, 8)}`;
  let env: Record<string, string>;
  beforeAll(async () => {
    if (kind === "mongodb") {
      mongo = await MongoClient.connect(inject("mongoUri"));
      store = new MongoTaskStore(mongo, mongo.db(dbName));
      await store.init();
    } else {
      store = new MemoryTaskStore();
    }
    const dir = await mkdtemp(join(tmpdir(), "conversation-workflows-"));
    for (const [name, body] of Object.entries(WORKFLOWS)) await writeFile(join(dir, name), body);
    env = {
      WORKFLOWS_DIR: dir,
      BUILTIN_WORKFLOWS: "demo",
      BLOCKING_TIMEOUT_MS: "5000",
      API_KEYS: JSON.stringify([
        { id: "alice", tenant: "acme", scopes: ALL, key: ALICE },
        { id: "bob", tenant: "globex", scopes: ALL, key: BOB },
      ]),
    };
    t = await startTestApp(env, store, { "capture-conversation": capture });
  });
  afterAll(async () => {
    await t?.close();
    await mongo?.db(dbName).dropDatabase();
    await mongo?.close();
  });

  async function rpc(
    method: string,
    params: unknown,
    options: { key?: string; version?: "0.3" | "1.0" } = {},
  ): Promise<Obj> {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${options.key ?? ALICE}`,
        ...(options.version === "1.0" ? { "A2A-Version": "1.0" } : {}),
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Obj;
    expect(body["error"]).toBeUndefined();
    return body["result"] as Obj;
  }
  /** A 0.3 message/send, blocking: the Task (or the Message of a stateless skill). */
  const send03 = (message: Obj, key?: string) =>
    rpc(
      "message/send",
      {
        message: { kind: "message", messageId: randomUUID(), role: "user", ...message },
        configuration: { blocking: true },
      },
      { ...(key ? { key } : {}) },
    );
  const seenBy = (taskId: string, nodeId?: string) =>
    seen.filter((s) => s.taskId === taskId && (!nodeId || s.nodeId === nodeId)).at(-1)!;

  const BYTES = Buffer.from("hello, file").toString("base64");
  const richParts03 = [
    { kind: "text", text: "look at these", metadata: { lang: "en" } },
    { kind: "file", file: { bytes: BYTES, mimeType: "text/plain", name: "hello.txt" } },
    {
      kind: "file",
      file: { uri: "https://example.com/boat.png", mimeType: "image/png" },
      metadata: { role: "reference" },
    },
    { kind: "data", data: { size: 3 } },
  ];

  it("the first node sees the creating message whole (file parts by bytes and URI, data, metadata), its messageId, role and contextId", async () => {
    const messageId = randomUUID();
    const contextId = randomUUID();
    const task = await send03({
      messageId,
      contextId,
      parts: richParts03,
      metadata: { skillId: "probe", channel: "chat" },
    });
    expect(task["status"]["state"]).toBe("completed");
    const s = seenBy(task["id"]);
    expect(s.contextId).toBe(contextId);
    expect(s.message).toMatchObject({
      messageId,
      role: "user",
      contextId,
      metadata: { skillId: "probe", channel: "chat" },
    });
    expect(s.message.parts).toEqual([
      { kind: "text", text: "look at these", metadata: { lang: "en" } },
      { kind: "file", file: { bytes: BYTES, mimeType: "text/plain", name: "hello.txt" } },
      {
        kind: "file",
        file: { uri: "https://example.com/boat.png", mimeType: "image/png" },
        metadata: { role: "reference" },
      },
      { kind: "data", data: { size: 3 } },
    ]);
    // `input` is as before: the text and data parts.
    expect(s.input).toEqual({ text: "look at these", data: { size: 3 } });
    expect(s.referenced).toEqual([]);
    expect(s.earlier).toEqual([]);
  });

  it("the same message whole over A2A 1.0 (raw bytes, url, data)", async () => {
    const contextId = randomUUID();
    const result = await rpc(
      "SendMessage",
      {
        message: {
          messageId: randomUUID(),
          role: "ROLE_USER",
          contextId,
          parts: [
            { text: "v1 parts" },
            { raw: BYTES, mediaType: "text/plain", filename: "hello.txt" },
            { url: "https://example.com/boat.png", mediaType: "image/png" },
            { data: { size: 4 } },
          ],
          metadata: { skillId: "probe", channel: "v1" },
        },
        configuration: { returnImmediately: false },
      },
      { version: "1.0" },
    );
    const s = seenBy(result["task"]["id"]);
    expect(s.contextId).toBe(contextId);
    expect(s.message.metadata).toMatchObject({ channel: "v1" });
    expect(s.message.parts).toEqual([
      { kind: "text", text: "v1 parts" },
      { kind: "file", file: { bytes: BYTES, mimeType: "text/plain", name: "hello.txt" } },
      { kind: "file", file: { uri: "https://example.com/boat.png", mimeType: "image/png" } },
      { kind: "data", data: { size: 4 } },
    ]);
  });

  it("after an interrupt, a node sees the caller's newest reply (input stays the first message's)", async () => {
    const first = await send03({ parts: [{ kind: "text", text: "start" }], metadata: { skillId: "probe-interrupt" } });
    expect(first["status"]["state"]).toBe("input-required");
    const replyId = randomUUID();
    const done = await send03({
      messageId: replyId,
      taskId: first["id"],
      contextId: first["contextId"],
      parts: [{ kind: "text", text: "nothing more" }, richParts03[2]],
      metadata: { mood: "done" },
    });
    expect(done["status"]["state"]).toBe("completed");
    expect(seenBy(first["id"], "before").message.parts).toEqual([{ kind: "text", text: "start" }]);
    const after = seenBy(first["id"], "after");
    expect(after.message).toMatchObject({
      messageId: replyId,
      metadata: { mood: "done" },
      parts: [{ kind: "text", text: "nothing more" }, richParts03[2]],
    });
    expect(after.input.text).toBe("start");
    expect(after.contextId).toBe(first["contextId"]);
  });

  it("referencedTasks: the named tasks of the caller's tenant, in order, with state and artifacts; an unknown or another tenant's id is absent", async () => {
    const contextId = randomUUID();
    const a = await send03({ contextId, parts: [{ kind: "text", text: "first" }], metadata: { skillId: "probe" } });
    const b = await send03({ contextId, parts: [{ kind: "text", text: "second" }], metadata: { skillId: "probe" } });
    const bobs = await send03({ parts: [{ kind: "text", text: "bob's secret" }], metadata: { skillId: "probe" } }, BOB);
    const c = await send03({
      contextId,
      referenceTaskIds: [b["id"], bobs["id"], "no-such-task", a["id"], b["id"]],
      parts: [{ kind: "text", text: "third" }],
      metadata: { skillId: "probe" },
    });
    const s = seenBy(c["id"]);
    expect(s.message.referenceTaskIds).toEqual([b["id"], bobs["id"], "no-such-task", a["id"], b["id"]]);
    expect(s.referenced.map((r) => r.id)).toEqual([b["id"], a["id"]]);
    expect(s.referenced[0]).toEqual({
      id: b["id"],
      contextId,
      state: "completed",
      artifacts: [expect.objectContaining({ name: "note", parts: [{ kind: "text", text: "second" }] })],
    });
    expect(JSON.stringify(s.referenced)).not.toContain("bob's secret");
    // Bob naming Alice's task sees nothing of it either.
    const bobAgain = await send03(
      { referenceTaskIds: [a["id"]], parts: [{ kind: "text", text: "peek" }], metadata: { skillId: "probe" } },
      BOB,
    );
    expect(seenBy(bobAgain["id"]).referenced).toEqual([]);
  });

  it("contextTasks: the tenant's earlier tasks of this context, newest first, bounded (default 10, at most 50), without this task or other contexts and tenants", async () => {
    const contextId = randomUUID();
    const tasks: Obj[] = [];
    const turn = async (text: string, extra: Obj = {}) => {
      const task = await send03({
        contextId,
        parts: [{ kind: "text", text }],
        metadata: { skillId: "probe", ...extra },
      });
      tasks.push(task);
      return task;
    };
    /** ListTasks order: the status timestamp (last update), then the id, descending. */
    const newestFirst = (list: Obj[]) =>
      [...list]
        .sort(
          (a, b) =>
            (b["status"]["timestamp"] as string).localeCompare(a["status"]["timestamp"]) ||
            (b["id"] as string).localeCompare(a["id"]),
        )
        .map((x) => x["id"] as string);
    for (let i = 0; i < 12; i++) await turn(`turn ${i}`);
    await send03({ parts: [{ kind: "text", text: "elsewhere" }], metadata: { skillId: "probe" } });
    await send03(
      { contextId, parts: [{ kind: "text", text: "bob in the same context id" }], metadata: { skillId: "probe" } },
      BOB,
    );

    const before = [...tasks];
    const byDefault = await turn("now");
    const s = seenBy(byDefault["id"]);
    expect(s.earlier.map((e) => e.id)).toEqual(newestFirst(before).slice(0, 10));
    expect(s.earlier[0]).toMatchObject({
      contextId,
      state: "completed",
      artifacts: [{ parts: [{ kind: "text", text: "turn 11" }] }],
    });

    const beforeThree = [...tasks];
    const three = await turn("three", { limit: 3 });
    expect(seenBy(three["id"]).earlier.map((e) => e.id)).toEqual(newestFirst(beforeThree).slice(0, 3));

    const beforeMany = [...tasks];
    const many = await turn("all", { limit: 500 });
    const all = seenBy(many["id"]).earlier.map((e) => e.id);
    expect(all).toEqual(newestFirst(beforeMany));
    expect(all).toHaveLength(14);
    expect(all).not.toContain(many["id"]);
  });

  it("after a restart, a node past an interrupt reads its referenced and earlier tasks again; a task created after it is not earlier", async () => {
    const contextId = randomUUID();
    const earlier = await send03({
      contextId,
      parts: [{ kind: "text", text: "earlier" }],
      metadata: { skillId: "probe" },
    });
    const waiting = await send03({
      contextId,
      referenceTaskIds: [earlier["id"]],
      parts: [{ kind: "text", text: "wait" }],
      metadata: { skillId: "probe-interrupt" },
    });
    expect(waiting["status"]["state"]).toBe("input-required");
    const later = await send03({ contextId, parts: [{ kind: "text", text: "later" }], metadata: { skillId: "probe" } });
    expect(seenBy(waiting["id"], "before").referenced.map((r) => r.id)).toEqual([earlier["id"]]);

    await t.close();
    t = await startTestApp(env, store, { "capture-conversation": capture });

    const done = await send03({
      taskId: waiting["id"],
      contextId,
      referenceTaskIds: [earlier["id"], later["id"]],
      parts: [{ kind: "text", text: "go on" }],
    });
    expect(done["status"]["state"]).toBe("completed");
    const after = seenBy(waiting["id"], "after");
    expect(after.message.parts).toEqual([{ kind: "text", text: "go on" }]);
    expect(after.referenced.map((r) => [r.id, r.state])).toEqual([
      [earlier["id"], "completed"],
      [later["id"], "completed"],
    ]);
    expect(after.earlier.map((r) => r.id)).toEqual([earlier["id"]]);
    // The later task saw the waiting one (input-required then) as earlier.
    expect(seenBy(later["id"]).earlier.map((r) => [r.id, r.state])).toEqual([
      [waiting["id"], "input-required"],
      [earlier["id"], "completed"],
    ]);
  });

  it("the stateless path sees the same message, contextId, referenced and earlier tasks", async () => {
    const contextId = randomUUID();
    const earlier = await send03({
      contextId,
      parts: [{ kind: "text", text: "durable" }],
      metadata: { skillId: "probe" },
    });
    const messageId = randomUUID();
    const answer = await send03({
      messageId,
      contextId,
      referenceTaskIds: [earlier["id"]],
      parts: richParts03,
      metadata: { skillId: "probe-stateless", channel: "chat" },
    });
    expect(answer["kind"]).toBe("message");
    const s = seen.find((x) => x.message.messageId === messageId)!;
    expect(s.taskId).toBe(`message:${messageId}`);
    expect(s.contextId).toBe(contextId);
    expect(s.message).toMatchObject({ messageId, role: "user", metadata: { channel: "chat" } });
    expect(s.message.parts).toEqual(richParts03);
    expect(s.referenced.map((r) => r.id)).toEqual([earlier["id"]]);
    expect(s.earlier.map((r) => r.id)).toEqual([earlier["id"]]);

    // Without a contextId, the handler sees the one the answer carries.
    const fresh = randomUUID();
    const answered = await send03({
      messageId: fresh,
      parts: [{ kind: "text", text: "new" }],
      metadata: { skillId: "probe-stateless" },
    });
    expect(seen.find((x) => x.message.messageId === fresh)!.contextId).toBe(answered["contextId"]);
  });

  describe("the refine demo", () => {
    const pictureOf = (task: Obj) => {
      const artifact = (task["artifacts"] as Obj[]).find((a) => a["name"] === "picture")!;
      return artifact["parts"][0] as Obj & { text: string };
    };

    it("A2A 0.3: 'a boat', then 'make it red' referencing it in the same context gives 'a red boat', naming the task refined", async () => {
      const first = await send03({ parts: [{ kind: "text", text: "a boat" }], metadata: { skillId: "refine" } });
      expect(first["status"]["state"]).toBe("completed");
      expect(pictureOf(first).text).toBe("a boat");
      const second = await send03({
        contextId: first["contextId"],
        referenceTaskIds: [first["id"]],
        parts: [{ kind: "text", text: "make it red" }],
        metadata: { skillId: "refine" },
      });
      expect(second["status"]["state"]).toBe("completed");
      expect(second["contextId"]).toBe(first["contextId"]);
      expect(second["id"]).not.toBe(first["id"]);
      const part = pictureOf(second);
      expect(part.text).toBe("a red boat");
      expect(part["metadata"]).toEqual({ refinedFrom: { taskId: first["id"], contextId: first["contextId"] } });
      // And again, on the refined one.
      const third = await send03({
        contextId: first["contextId"],
        referenceTaskIds: [second["id"]],
        parts: [{ kind: "text", text: "make it enormous" }],
        metadata: { skillId: "refine" },
      });
      expect(pictureOf(third).text).toBe("an enormous red boat");
    });

    it("A2A 1.0: the same conversation over SendMessage", async () => {
      const send10 = async (message: Obj) =>
        (
          await rpc(
            "SendMessage",
            {
              message: { messageId: randomUUID(), role: "ROLE_USER", metadata: { skillId: "refine" }, ...message },
              configuration: { returnImmediately: false },
            },
            { version: "1.0" },
          )
        )["task"] as Obj;
      const first = await send10({ parts: [{ text: "a boat" }] });
      expect(first["status"]["state"]).toBe("TASK_STATE_COMPLETED");
      const second = await send10({
        contextId: first["contextId"],
        referenceTaskIds: [first["id"]],
        parts: [{ text: "make it red" }],
      });
      expect(second["status"]["state"]).toBe("TASK_STATE_COMPLETED");
      const part = pictureOf(second);
      expect(part.text).toBe("a red boat");
      expect(part["metadata"]).toEqual({ refinedFrom: { taskId: first["id"], contextId: first["contextId"] } });
    });

    it("a reference the caller may not read fails the refinement, saying no more than for an unknown id", async () => {
      const alices = await send03({ parts: [{ kind: "text", text: "a boat" }], metadata: { skillId: "refine" } });
      const bobs = await send03(
        {
          referenceTaskIds: [alices["id"]],
          parts: [{ kind: "text", text: "make it red" }],
          metadata: { skillId: "refine" },
        },
        BOB,
      );
      const unknown = await send03(
        {
          referenceTaskIds: [randomUUID()],
          parts: [{ kind: "text", text: "make it red" }],
          metadata: { skillId: "refine" },
        },
        BOB,
      );
      expect(bobs["status"]["state"]).toBe("failed");
      expect(bobs["metadata"]["openwop"]["error"]).toEqual(unknown["metadata"]["openwop"]["error"]);
      expect(bobs["metadata"]["openwop"]["error"]["code"]).toBe("referenced_task_not_found");
    });

    it("without referenceTaskIds, an instruction refines the newest earlier task of the context", async () => {
      const first = await send03({ parts: [{ kind: "text", text: "a house" }], metadata: { skillId: "refine" } });
      const second = await send03({
        contextId: first["contextId"],
        parts: [{ kind: "text", text: "make it blue" }],
        metadata: { skillId: "refine" },
      });
      expect(pictureOf(second).text).toBe("a blue house");
    });
  });
});
