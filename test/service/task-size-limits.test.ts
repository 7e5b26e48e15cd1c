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
 * later write failed with an internal error. Now the store refuses the write that would pass MAX_TASK_BYTES
 * with a clear invalid-params error (before writing anything), the task stays readable and unchanged, and a
 * single message over MAX_MESSAGE_BYTES is refused the same way (413 on HTTP). The same scenario with the
 * limits scaled down 8x (2 MiB per task, 256 KiB per message) so it runs in seconds; the defaults against a
 * document over 16 MiB are covered by the store contract.
 */
const LIMITS = { maxTaskBytes: 2 * 1024 * KB, maxMessageBytes: 256 * KB };
function sizeCaps(name: string, open: () => Promise<TaskStore>) {
  describe(`size caps (${name})`, () => {
    let t: TestApp | undefined;
    afterAll(async () => t?.close());

    it("82 replies of 200 KB: the one that would pass the task limit is refused with invalid-params; the task stays readable", async () => {
      const store = await open();
      t = await startTestApp({ MAX_BODY_BYTES: String(2 * 1024 * KB), MAX_TASK_BYTES: String(LIMITS.maxTaskBytes), MAX_MESSAGE_BYTES: String(LIMITS.maxMessageBytes) }, store);
      const created = await rpc(t, "message/send", { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "draft" }], metadata: { skillId: "approval-gate" } } });
      const task = created.result!;
      expect(task.status.state).toBe("input-required");

      let refused: RpcAnswer["error"] | undefined;
      let accepted = 0;
      for (let i = 0; i < 82 && !refused; i++) {
        const answer = await rpc(t, "message/send", bigReply(task, 200 * KB));
        if (answer.error) refused = answer.error;
        else accepted++;
      }
      expect(refused, "a reply is refused before the task reaches the store's limit").toBeDefined();
      expect(refused!.code).toBe(-32602);
      expect(refused!.message).toMatch(/over the limit of \d+ bytes/);
      expect(accepted).toBeGreaterThan(5);
      expect(accepted * 200 * KB).toBeLessThanOrEqual(LIMITS.maxTaskBytes);

      // Unchanged and readable: same version as after the last accepted reply, still waiting.
      const before = await store.get(task.id);
      const again = await rpc(t, "message/send", bigReply(task, 200 * KB));
      expect(again.error?.code).toBe(-32602);
      const after = await store.get(task.id);
      expect(after?.version).toBe(before?.version);
      const read = await rpc(t, "tasks/get", { id: task.id, historyLength: 1 });
      expect(read.result?.status.state).toBe("input-required");
      const log = await store.readEvents(task.id, 0);
      expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
      expect(log.at(-1)?.sequence).toBe(after?.version);

      // A single message over MAX_MESSAGE_BYTES: refused before anything is looked up; 413 on HTTP+JSON.
      const tooBig = await rpc(t, "message/send", bigReply(task, LIMITS.maxMessageBytes + KB));
      expect(tooBig.error?.code).toBe(-32602);
      const http = await fetch(`${t.baseUrl}/v1/message:send`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: { messageId: randomUUID(), role: "ROLE_USER", content: [{ text: "x".repeat(LIMITS.maxMessageBytes + KB) }] } }),
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
