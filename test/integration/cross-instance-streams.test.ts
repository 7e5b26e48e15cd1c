// Two hosts on one database (two apps, two MongoDB clients, like two replicas behind a load balancer):
// a subscriber on instance B follows a task that instance A drives, through B's commit feed (a change
// stream on task_events, or the polling fallback), and sees exactly what a subscriber on A sees.
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
const WORKFLOWS_DIR = new URL("../fixtures/fanout-workflows", import.meta.url).pathname;

for (const feed of ["change-stream", "poll"] as const) {
  describe(`a stream on instance B follows commits made on instance A (COMMIT_FEED=${feed})`, () => {
    const dbName = `fanout_${feed.replace("-", "_")}_${randomUUID().slice(0, 8)}`;
    const clients: MongoClient[] = [];
    let a: TestApp;
    let b: TestApp;

    async function host(): Promise<TestApp> {
      const client = await MongoClient.connect(inject("mongoUri"));
      clients.push(client);
      const store = new MongoTaskStore(client, client.db(dbName));
      await store.init();
      return startTestApp({ WORKFLOWS_DIR, COMMIT_FEED: feed, COMMIT_FEED_POLL_MS: "20" }, store);
    }

    beforeAll(async () => {
      a = await host();
      b = await host();
    });
    afterAll(async () => {
      await Promise.all([a?.close(), b?.close()]);
      await clients[0]?.db(dbName).dropDatabase();
      await Promise.all(clients.map((c) => c.close()));
    });

    const rpc = async (
      on: TestApp,
      method: string,
      params: unknown,
      headers: Record<string, string> = {},
    ): Promise<Obj> => {
      const res = await fetch(`${on.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
      });
      return (await res.json()) as Obj;
    };
    /** Opens a stream; `frames` resolves with its results once it ends. */
    const subscribe = (on: TestApp, method: string, params: unknown, headers: Record<string, string> = {}) => {
      const frames = fetch(`${on.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      }).then((res) => readSse(res));
      return { frames: frames.then((all) => all.map((f) => (f.data as Obj)["result"] as Obj)) };
    };
    const TEXT = Array.from({ length: 30 }, (_, i) => `w${String(i).padStart(2, "0")}`).join("");
    const message = (text: string, extra: Obj = {}) => ({
      kind: "message",
      messageId: randomUUID(),
      role: "user",
      parts: [{ kind: "text", text }],
      ...extra,
    });
    const textOf = (artifact: Obj | undefined): string =>
      ((artifact?.["parts"] ?? []) as Obj[]).map((p) => p["text"] as string).join("");

    /** A task A drives (a slow streamed artifact), created without waiting for it. */
    async function runningTask(): Promise<string> {
      const created = await rpc(a, "message/send", {
        message: message(TEXT, { metadata: { skillId: "slow-stream" } }),
        configuration: { blocking: false },
      });
      return created["result"]["id"] as string;
    }

    /** The stored log is gap-free, and its chunks of the streamed artifact. */
    async function chunksInLog(taskId: string): Promise<number> {
      const log = await a.store.readEvents(taskId, 0);
      expect(log.map((e) => e.sequence)).toEqual(log.map((_, i) => i));
      return log.filter((e) => e.a2a?.artifact?.artifactId === "stream.stream").length;
    }

    /**
     * What a subscriber saw: the artifact rebuilt from the task it was handed first plus every chunk after it
     * (a missing or repeated chunk changes the text), and how many updates it got after the first frame.
     */
    function rebuild(frames: Obj[], version: "0.3" | "1.0"): { text: string; chunks: number; last: Obj } {
      const task = version === "0.3" ? frames[0]! : (frames[0]!["task"] as Obj);
      let text = textOf(((task["artifacts"] ?? []) as Obj[]).find((x) => x["artifactId"] === "stream.stream"));
      let chunks = 0;
      for (const frame of frames.slice(1)) {
        const update =
          version === "0.3"
            ? frame["kind"] === "artifact-update"
              ? frame
              : undefined
            : (frame["artifactUpdate"] as Obj | undefined);
        if (update?.["artifact"]["artifactId"] !== "stream.stream") continue;
        text = update["append"] ? text + textOf(update["artifact"]) : textOf(update["artifact"]);
        chunks++;
      }
      return { text, chunks, last: frames.at(-1)! };
    }

    /** Both tails come from one log: the shorter (the later subscriber's) is the end of the longer one. */
    function sameTail(x: Obj[], y: Obj[]): void {
      const [short, long] = x.length <= y.length ? [x, y] : [y, x];
      expect(long.slice(long.length - short.length)).toEqual(short);
    }

    it("0.3 tasks/resubscribe on B streams A's commits to completion, in order, without gaps or duplicates", async () => {
      const taskId = await runningTask();
      const onB = subscribe(b, "tasks/resubscribe", { id: taskId });
      const onA = subscribe(a, "tasks/resubscribe", { id: taskId });
      const [seenOnA, seenOnB] = await Promise.all([onA.frames, onB.frames]);
      const fromB = rebuild(seenOnB, "0.3");
      expect(fromB.text).toBe(TEXT);
      expect(fromB.chunks).toBeGreaterThan(0);
      expect(fromB.last["final"]).toBe(true);
      expect(fromB.last["status"]["state"]).toBe("completed");
      expect(rebuild(seenOnA, "0.3").text).toBe(TEXT);
      sameTail(seenOnA.slice(1), seenOnB.slice(1));
      expect(await chunksInLog(taskId)).toBe(30);
    });

    it("1.0 SubscribeToTask on B streams A's commits to completion, in order, without gaps or duplicates", async () => {
      const v10 = { "A2A-Version": "1.0" };
      const taskId = await runningTask();
      const onB = subscribe(b, "SubscribeToTask", { id: taskId }, v10);
      const onA = subscribe(a, "SubscribeToTask", { id: taskId }, v10);
      const [seenOnA, seenOnB] = await Promise.all([onA.frames, onB.frames]);
      const fromB = rebuild(seenOnB, "1.0");
      expect(fromB.text).toBe(TEXT);
      expect(fromB.chunks).toBeGreaterThan(0);
      expect(fromB.last["statusUpdate"]["status"]["state"]).toBe("TASK_STATE_COMPLETED");
      expect(rebuild(seenOnA, "1.0").text).toBe(TEXT);
      sameTail(seenOnA.slice(1), seenOnB.slice(1));
      expect(await chunksInLog(taskId)).toBe(30);
    });
  });
}
