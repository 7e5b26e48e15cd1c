import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, describe, expect, inject, it } from "vitest";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import "../support/mongo.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

interface RpcAnswer {
  result?: { id: string; contextId: string; status: { state: string } };
  error?: { code: number; message: string; data?: unknown };
}

const KB = 1024;

async function rpc(t: TestApp, method: string, params: unknown): Promise<RpcAnswer> {
  const response = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return (await response.json()) as RpcAnswer;
}

/** A reply that keeps the approval gate waiting ("ask"), carrying `bytes` of text: history grows by about that much. */
function bigReply(task: { id: string; contextId: string }, bytes: number) {
  return {
    message: {
      kind: "message",
      messageId: randomUUID(),
      role: "user",
      taskId: task.id,
      contextId: task.contextId,
      parts: [
        { kind: "text", text: "x".repeat(bytes) },
        { kind: "data", data: { action: "ask", question: "and one more thing?" } },
      ],
    },
  };
}

/**
 * A chatty task used to reach MongoDB's 16 MiB document limit after ~80 large replies of 200 KB, and every
 * later write failed with an internal error. The history now lives in the event log (each transition's
 * events carry its messages) and the task head keeps only the newest messages, so such a task keeps going:
 * its head stays far below MAX_TASK_BYTES however long the conversation, and every message stays readable.
 * A single message over MAX_MESSAGE_BYTES is refused with invalid-params before anything is looked up (413 on
 * HTTP). The limits are scaled down 8x (2 MiB per task head, 256 KiB per message), so 82 replies of 200 KB
 * hold 8 times the head limit; a head over MAX_TASK_BYTES is refused as the store contract shows.
 */
const LIMITS = { maxTaskBytes: 2 * 1024 * KB, maxMessageBytes: 256 * KB };

function sizeCaps(name: string, open: () => Promise<TaskStore>) {
  describe(`size caps (${name})`, () => {
    let t: TestApp | undefined;
    afterAll(async () => t?.close());

    it("82 replies of 200 KB: all accepted, the task head stays bounded, the whole history stays readable", async () => {
      const store = await open();
      t = await startTestApp(
        {
          MAX_BODY_BYTES: String(2 * 1024 * KB),
          MAX_TASK_BYTES: String(LIMITS.maxTaskBytes),
          MAX_MESSAGE_BYTES: String(LIMITS.maxMessageBytes),
        },
        store,
      );
      const created = await rpc(t, "message/send", {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: "draft" }],
          metadata: { skillId: "approval-gate" },
        },
      });
      const task = created.result!;
      expect(task.status.state).toBe("input-required");

      const replies = 82;
      let headBytes = 0;
      for (let i = 0; i < replies; i++) {
        const answer = await rpc(t, "message/send", {
          ...bigReply(task, 200 * KB),
          configuration: { historyLength: 1 },
        });
        expect(answer.error, `reply ${i}`).toBeUndefined();
        headBytes = Math.max(headBytes, Buffer.byteLength(JSON.stringify((await store.get(task.id))!.snapshot)));
      }
      expect(replies * 200 * KB).toBeGreaterThan(8 * LIMITS.maxTaskBytes);
      expect(headBytes).toBeLessThan(LIMITS.maxTaskBytes / 2);

      // Every message is there, in order: the first request, then each reply with the agent's question after it.
      const read = await rpc(t, "tasks/get", { id: task.id });
      const history = (
        read.result as unknown as { history: Array<{ role: string; parts: Array<{ kind: string; text?: string }> }> }
      ).history;
      expect(history).toHaveLength(2 + 2 * replies);
      expect(history[0]!.parts[0]!.text).toBe("draft");
      expect(history.filter((m) => m.role === "user" && m.parts[0]!.text?.length === 200 * KB)).toHaveLength(replies);
      const last = await rpc(t, "tasks/get", { id: task.id, historyLength: 3 });
      expect((last.result as unknown as { history: unknown[] }).history).toEqual(history.slice(-3));
      const before = await store.get(task.id);
      const log = await store.readEvents(task.id, 0);
      expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
      expect(log.at(-1)?.sequence).toBe(before?.version);

      // A single message over MAX_MESSAGE_BYTES: refused before anything is looked up; 413 on HTTP+JSON.
      const tooBig = await rpc(t, "message/send", bigReply(task, LIMITS.maxMessageBytes + KB));
      expect(tooBig.error?.code).toBe(-32602);
      expect(tooBig.error?.message).toMatch(/over the limit of \d+ bytes/);
      const http = await fetch(`${t.baseUrl}/v1/message:send`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          message: {
            messageId: randomUUID(),
            role: "ROLE_USER",
            content: [{ text: "x".repeat(LIMITS.maxMessageBytes + KB) }],
          },
        }),
      });
      expect(http.status).toBe(413);
      expect((await store.get(task.id))?.version).toBe(before?.version);
    }, 60_000);
  });
}

// The app hands its configured limits to the store it opens; a store given to the test app is built with them here.
const limits = { maxArtifactBytes: 4 * 1024 * KB, ...LIMITS };
sizeCaps("memory", async () => new MemoryTaskStore(undefined, limits));

const dbName = `size_caps_${randomUUID().slice(0, 8)}`;
let client: MongoClient | undefined;
sizeCaps(`mongodb (${inject("mongoBackend")})`, async () => {
  client = await MongoClient.connect(inject("mongoUri"));
  const store = new MongoTaskStore(client, client.db(dbName), { limits });
  await store.init();
  return store;
});
afterAll(async () => {
  await client?.db(dbName).dropDatabase();
});
