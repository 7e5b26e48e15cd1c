// JSON-RPC and HTTP+JSON streams on the live lane (domain/live-stream.ts), end to end over HTTP: many streams of
// one task each get the same frames, in commit order, once; a stream whose caller goes away and the streams
// that end let go of the task's channel.
import { randomUUID } from "node:crypto";
import { connect } from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TaskObserver } from "../../src/engine/task-observer.js";
import { readSse, type SseFrame } from "../support/sse.js";
import { startTestApp, TEST_WORKFLOWS_DIR, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;

describe("streams on the live lane", () => {
  let t: TestApp;
  let observer: TaskObserver;
  beforeAll(async () => {
    t = await startTestApp({ WORKFLOWS_DIR: TEST_WORKFLOWS_DIR });
    // The app does not expose its observer; the service holds it.
    observer = (t.app.service as unknown as { options: { observer: TaskObserver } }).options.observer;
  });
  afterAll(() => t.close());

  const rpc = (method: string, params: unknown, id: number | string = 1) =>
    fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    });
  const send = async (skillId: string, text = "x"): Promise<Obj> => {
    const res = await rpc("message/send", {
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        parts: [{ kind: "text", text }],
        metadata: { skillId },
      },
      configuration: { blocking: false },
    });
    return ((await res.json()) as { result: Obj }).result;
  };
  const until = async (condition: () => boolean, what: string) => {
    for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
    if (!condition()) throw new Error(`timed out waiting for ${what}`);
  };
  const stateOf = (frame: SseFrame) => {
    const result = (frame.data as Obj)["result"] as Obj;
    return result["kind"] === "task"
      ? `task:${result["status"].state}`
      : `${result["kind"]}:${result["status"]?.state ?? result["artifact"]?.artifactId}`;
  };

  it("streams of one task each get the task, then the same updates in order, and end; the channel is let go of", async () => {
    const task = await send("conformance-cancellable");
    // Each response's headers come with its first frame (the Task): all 20 are open before the cancel.
    // Some requests share an id (their frames are shared too), the others each have their own.
    const idOf = (i: number) => (i % 3 === 0 ? "same" : i % 2 ? i : `s-${i}`);
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => rpc("tasks/resubscribe", { id: task["id"] }, idOf(i))),
    );
    for (const res of responses) expect(res.headers.get("content-type")).toContain("text/event-stream");
    const streams = responses.map((res) => readSse(res));
    expect(observer.followedTasks).toBe(1);
    expect(((await (await rpc("tasks/cancel", { id: task["id"] })).json()) as Obj)["result"].status.state).toBe(
      "canceled",
    );
    const all = await Promise.all(streams);
    all.forEach((frames, i) => {
      expect(frames.map((f) => (f.data as Obj)["id"])).toEqual(frames.map(() => idOf(i)));
      expect(frames[0] && stateOf(frames[0])).toMatch(/^task:/);
      expect(frames.at(-1)?.data).toMatchObject({
        result: { kind: "status-update", final: true, status: { state: "canceled" } },
      });
      expect(frames.slice(1).map(stateOf)).toEqual(all[0]!.slice(1).map(stateOf));
    });
    await until(() => observer.followedTasks === 0, "the channel to be let go of");
  });

  it("a caller that goes away mid-stream releases the channel; the task goes on", async () => {
    const task = await send("conformance-cancellable");
    const controller = new AbortController();
    const res = await rpc("tasks/resubscribe", { id: task["id"] });
    const reading = readSse(res, () => true); // stops reading (and closes) after the first frame
    const rest = await fetch(`${t.baseUrl}/v1/tasks/${task["id"]}:subscribe`, { signal: controller.signal });
    const restFrames: SseFrame[] = [];
    const restReading = readSse(rest, (frame) => void restFrames.push(frame)).catch(() => undefined);
    expect((await reading).length).toBe(1);
    await until(() => restFrames.length === 1, "the HTTP+JSON stream's first frame");
    await until(() => observer.followedTasks === 1, "the channel");
    controller.abort();
    await restReading;
    await until(() => observer.followedTasks === 0, "the channel to be let go of");
    expect(((await (await rpc("tasks/get", { id: task["id"] })).json()) as Obj)["result"].status.state).toBe("working");
    await rpc("tasks/cancel", { id: task["id"] });
  });

  it("over h2c (no socket of its own to cork) a stream gets its frames and ends too", async () => {
    const task = await send("conformance-cancellable");
    const session = connect(t.baseUrl);
    try {
      const req = session.request({ ":method": "POST", ":path": "/a2a/jsonrpc", "content-type": "application/json" });
      req.end(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tasks/resubscribe", params: { id: task["id"] } }));
      req.setEncoding("utf8");
      let body = "";
      const ended = new Promise<void>((resolve) => req.on("end", resolve));
      req.on("data", (chunk: string) => (body += chunk));
      await until(() => body.includes("\n\n"), "the task frame");
      await rpc("tasks/cancel", { id: task["id"] });
      await ended;
      // Each frame: its `id:` (the stream cursor), then its `data:`.
      const frames = body
        .split("\n\n")
        .filter(Boolean)
        .map(
          (f) =>
            JSON.parse(
              f
                .split("\n")
                .find((l) => l.startsWith("data: "))!
                .slice(6),
            ) as Obj,
        );
      expect(frames[0]).toMatchObject({ id: 3, result: { kind: "task" } });
      expect(frames.at(-1)).toMatchObject({
        id: 3,
        result: { kind: "status-update", final: true, status: { state: "canceled" } },
      });
    } finally {
      session.close();
    }
    await until(() => observer.followedTasks === 0, "the channel to be let go of");
  });

  it("a stream failing before its first event answers as before: 0.3 one SSE error event, 1.0 a plain JSON-RPC error, HTTP+JSON an HTTP error", async () => {
    const legacy = await rpc("tasks/resubscribe", { id: randomUUID() }, 7);
    expect(legacy.headers.get("content-type")).toContain("text/event-stream");
    expect(await readSse(legacy)).toMatchObject([{ event: "error", data: { id: 7, error: { code: -32001 } } }]);
    const res = await rpc("SubscribeToTask", { id: randomUUID() }, 8);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await res.json()).toMatchObject({ id: 8, error: { code: -32001 } });
    const rest = await fetch(`${t.baseUrl}/v1/tasks/${randomUUID()}:subscribe`);
    expect(rest.status).toBe(404);
    expect(observer.followedTasks).toBe(0);
  });
});
