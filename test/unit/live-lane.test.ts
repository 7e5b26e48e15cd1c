// The live lane (domain/live-stream.ts): a follower's events reach its sink synchronously inside the
// commit's delivery, contiguous, in order and once each across the catch-up → live handover; a slow consumer
// is dropped with the `unavailable` error frame; a follower that stops or whose client goes away lets go of
// the task's channel.
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import { mapStream, withLive, type LiveIterable, type LiveSink } from "../../src/domain/live-stream.js";
import { TaskObserver } from "../../src/engine/task-observer.js";
import { TransitionHook } from "../../src/engine/transition-hook.js";
import { CommitBus } from "../../src/store/commit-bus.js";
import type { TaskContext } from "../../src/machine/task-context.js";
import { createLogger } from "../../src/observability/logger.js";
import { streamToSse, type HttpResponse } from "../../src/transport/http-io.js";

const TASK = "t-1";
const tick = () => new Promise((r) => setImmediate(r));

function event(sequence: number, type = "node.completed"): RunEvent {
  return { eventId: `e${sequence}`, runId: "r", type, payload: {}, timestamp: new Date(0).toISOString(), sequence };
}

/** A store whose event reads wait until the test lets them go; commits are appended, then published. */
function world(maxBuffered = 16, snapshot: "at-release" | "at-call" = "at-release") {
  const log: RunEvent[] = [];
  const gates: (() => void)[] = [];
  let gated = false;
  const reads = {
    get: () => Promise.reject(new Error("not used")),
    readEvents: async (_taskId: string, from: number, limit?: number) => {
      // The page is taken when the read is released (a commit made meanwhile is in it) or when it is made.
      const page = log.filter((e) => e.sequence >= from).slice(0, limit);
      if (gated) await new Promise<void>((r) => gates.push(r));
      return snapshot === "at-call" ? page : log.filter((e) => e.sequence >= from).slice(0, limit);
    },
  };
  const hook = new TransitionHook(createLogger("silent"));
  const observer = new TaskObserver({ reads, commits: new CommitBus(hook), maxBuffered });
  const commit = (...events: RunEvent[]) => {
    log.push(...events);
    hook.publish({ record: { taskId: TASK } as TaskRecord, context: {} as TaskContext, events });
  };
  return {
    log,
    observer,
    commit,
    /** Commits that land in the store without the hook telling (another instance's). */
    storeOnly: (...events: RunEvent[]) => log.push(...events),
    gate: () => (gated = true),
    release: async () => {
      gated = false;
      for (const go of gates.splice(0)) go();
      for (let i = 0; i < 5; i++) await tick();
    },
  };
}

function recorder(backlog = () => 0) {
  const seen: number[] = [];
  const outcome: { ended: boolean; failed?: unknown } = { ended: false };
  const sink: LiveSink<RunEvent> = {
    next: (e) => seen.push(e.sequence),
    end: () => (outcome.ended = true),
    fail: (err) => (outcome.failed = err),
    backlog,
  };
  return { seen, outcome, sink };
}

describe("the live lane of the task observer", () => {
  it("hands over from the catch-up to live commits with every event once, in order, then passes commits synchronously", async () => {
    const w = world();
    w.commit(event(0), event(1), event(2));
    w.gate();
    const r = recorder();
    w.observer.followLive({ taskId: TASK, status: "running" }, 0, r.sink);
    // Commits during the catch-up read: 3 lands in the store before the read is taken (so both the read and
    // the hook have it), 4 and 5 come through the hook only after.
    w.commit(event(3));
    await w.release();
    expect(r.seen).toEqual([0, 1, 2, 3]);
    w.gate();
    w.commit(event(4));
    w.commit(event(5));
    expect(r.seen).toEqual([0, 1, 2, 3, 4, 5]);
    // Live: no promise hop, the sink has it when the commit's publish returns.
    w.commit(event(6), event(7));
    expect(r.seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    w.commit(event(7), event(8)); // a repeat of 7 is skipped
    expect(r.seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    // A gap (9 committed elsewhere, not delivered): read from the store, then the batch after it.
    w.storeOnly(event(9));
    w.commit(event(10));
    expect(r.seen.at(-1)).toBe(8);
    await w.release();
    w.commit(event(11, "run.completed"));
    expect(r.seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(r.outcome).toEqual({ ended: true });
    w.commit(event(12));
    expect(r.seen.at(-1)).toBe(11);
    await tick();
    expect(w.observer.followedTasks).toBe(0);
  });

  it("holds commits delivered during the catch-up in order, even when one lands in a gap the read did not cover", async () => {
    const w = world(16, "at-call");
    w.commit(event(0));
    w.gate();
    const r = recorder();
    w.observer.followLive({ taskId: TASK, status: "running" }, 0, r.sink);
    w.commit(event(1));
    w.storeOnly(event(2));
    w.commit(event(3));
    await w.release(); // the first read has 0 only; 1 is held and next; 3 is held behind a gap the store fills
    expect(r.seen).toEqual([0, 1, 2, 3]);
    w.commit(event(4));
    expect(r.seen).toEqual([0, 1, 2, 3, 4]);
  });

  it("drops a follower whose sink has the subscriber buffer unflushed, with the unavailable error, and lets go of the channel", async () => {
    const w = world(2);
    let unflushed = 0;
    const r = recorder(() => unflushed);
    w.observer.followLive({ taskId: TASK, status: "running" }, 0, r.sink);
    await w.release();
    w.commit(event(0));
    unflushed = 2;
    w.commit(event(1));
    expect(r.seen).toEqual([0]);
    expect(r.outcome.failed).toBeInstanceOf(DomainError);
    expect((r.outcome.failed as DomainError).code).toBe("unavailable");
    expect(String((r.outcome.failed as Error).message)).toMatch(/fell more than 2 updates behind.*resubscribe/);
    await tick();
    expect(w.observer.followedTasks).toBe(0);
  });

  it("drops a follower when more commits than its buffer arrive during its catch-up", async () => {
    const w = world(2);
    w.gate();
    const r = recorder();
    w.observer.followLive({ taskId: TASK, status: "running" }, 0, r.sink);
    w.commit(event(0));
    w.commit(event(1));
    w.commit(event(2));
    expect((r.outcome.failed as DomainError).code).toBe("unavailable");
    await w.release();
    expect(r.seen).toEqual([]);
    expect(w.observer.followedTasks).toBe(0);
  });

  it("a stopped follower hears nothing more and lets go of the channel", async () => {
    const w = world();
    const r = recorder();
    const stop = w.observer.followLive({ taskId: TASK, status: "running" }, 0, r.sink);
    await w.release();
    w.commit(event(0));
    expect(w.observer.followedTasks).toBe(1);
    stop();
    w.commit(event(1));
    expect(r.seen).toEqual([0]);
    expect(r.outcome).toEqual({ ended: false });
    await tick();
    expect(w.observer.followedTasks).toBe(0);
  });
});

/** A ServerResponse stand-in: records what is written; `write` answers `writable` (false: the client is not reading). */
function fakeResponse() {
  const res = new EventEmitter() as EventEmitter & Record<string, unknown>;
  const written: string[] = [];
  Object.assign(res, {
    stream: {}, // as HTTP/2: no socket to cork
    writableEnded: false,
    headersSent: false,
    writable: true,
    writeHead: () => (res["headersSent"] = true),
    flushHeaders: () => undefined,
    write: (frame: string) => (written.push(frame), res["writable"]),
    end: () => (res["writableEnded"] = true),
  });
  return { res: res as unknown as HttpResponse & EventEmitter, written, state: res };
}

function sseOf(observer: TaskObserver): LiveIterable<string> {
  const source = withLive((async function* () {})() as AsyncGenerator<RunEvent>, (sink: LiveSink<RunEvent>) =>
    observer.followLive({ taskId: TASK, status: "running" }, 0, sink),
  );
  return mapStream(source, (e) => `event ${e.sequence}`) as LiveIterable<string>;
}

const pipeOptions = {
  encode: (value: string) => value,
  failedBeforeFirst: () => undefined,
  errorFrame: (err: unknown) => ({ error: (err as DomainError).code }),
};

describe("SSE through the live lane", () => {
  it("writes each commit's frame synchronously, and drops a client that does not read after the buffer with the error frame", async () => {
    const w = world(3);
    const { res, written, state } = fakeResponse();
    const piped = streamToSse(res, sseOf(w.observer), pipeOptions);
    await w.release();
    w.commit(event(0));
    expect(written).toEqual(['data: "event 0"\n\n']);
    state["writable"] = false; // the client stopped reading: every frame from now stays in the response's buffer
    w.commit(event(1));
    w.commit(event(2));
    w.commit(event(3));
    expect(written).toHaveLength(4);
    w.commit(event(4));
    expect(written).toHaveLength(5);
    expect(written.at(-1)).toBe('event: error\ndata: {"error":"unavailable"}\n\n');
    w.commit(event(5));
    expect(written).toHaveLength(5);
    await piped;
    expect(state["writableEnded"]).toBe(true);
    expect(w.observer.followedTasks).toBe(0);
  });

  it("a drained response is no longer behind", async () => {
    const w = world(2);
    const { res, written, state } = fakeResponse();
    void streamToSse(res, sseOf(w.observer), pipeOptions);
    await w.release();
    state["writable"] = false;
    w.commit(event(0));
    w.commit(event(1));
    res.emit("drain");
    state["writable"] = true;
    w.commit(event(2));
    w.commit(event(3));
    expect(written.map((f) => f.trim())).toEqual([0, 1, 2, 3].map((i) => `data: "event ${i}"`));
  });

  it("a client that goes away releases the task's channel", async () => {
    const w = world();
    const { res, written } = fakeResponse();
    const piped = streamToSse(res, sseOf(w.observer), pipeOptions);
    await w.release();
    w.commit(event(0));
    expect(w.observer.followedTasks).toBe(1);
    res.emit("close");
    await piped;
    w.commit(event(1));
    expect(written).toHaveLength(1);
    await tick();
    expect(w.observer.followedTasks).toBe(0);
  });
});
