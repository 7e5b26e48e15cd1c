// InFlightWork: a cancel or a shutdown aborts the running work of a task; the work's AbortSignal is made only
// when it is asked for, and says the same whether it was asked for before or after the abort.
import { describe, expect, it } from "vitest";
import { InFlightWork, ShutdownSignal, WorkAbort } from "../../src/engine/in-flight-work.js";

describe("WorkAbort", () => {
  it("a signal asked for before the abort fires with the first reason", () => {
    const abort = new WorkAbort();
    const signal = abort.signal;
    const seen: unknown[] = [];
    signal.addEventListener("abort", () => seen.push(signal.reason));
    expect(signal.aborted).toBe(false);
    abort.abort("first");
    abort.abort("second");
    expect(seen).toEqual(["first"]);
    expect(abort.aborted).toBe(true);
    expect(abort.reason).toBe("first");
    expect(abort.signal).toBe(signal);
  });

  it("a signal asked for after the abort is already aborted, with its reason", () => {
    const abort = new WorkAbort();
    const reason = new ShutdownSignal("down");
    abort.abort(reason);
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBe(reason);
  });

  it("an abort nobody asked a signal of is still told to the runner", () => {
    const abort = new WorkAbort();
    expect(abort.aborted).toBe(false);
    expect(abort.reason).toBeUndefined();
    abort.abort(0);
    expect(abort.aborted).toBe(true);
    expect(abort.reason).toBe(0);
  });
});

describe("InFlightWork", () => {
  it("aborts the task's running work (and only it), and reports the abort with the outcome", async () => {
    const work = new InFlightWork();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const a = work.run("a", async (abort) => {
      await gate;
      return abort.signal.aborted;
    });
    const b = work.run("b", async () => {
      await gate;
      return "done";
    });
    work.abort("a", "cancelled");
    work.abort("missing", "nothing runs");
    release();
    const [ranA, ranB] = await Promise.all([a, b]);
    expect(ranA).toMatchObject({ value: true });
    expect(ranA.abort.reason).toBe("cancelled");
    expect(ranB).toMatchObject({ value: "done" });
    expect(ranB.abort.aborted).toBe(false);
    // Finished work is no longer abortable.
    work.abortAll("late");
    expect(ranB.abort.aborted).toBe(false);
  });

  it("abortAll reaches every running task; a throw is the outcome's error", async () => {
    const work = new InFlightWork();
    const runs = ["x", "y"].map((id) =>
      work.run(
        id,
        (abort) =>
          new Promise((_, reject) => abort.signal.addEventListener("abort", () => reject(abort.signal.reason))),
      ),
    );
    const down = new ShutdownSignal("shutting down");
    work.abortAll(down);
    for (const ran of await Promise.all(runs)) {
      expect(ran.error).toBe(down);
      expect(ran.abort.reason).toBe(down);
    }
  });
});
