import { describe, expect, it } from "vitest";
import { Readiness } from "../../src/observability/readiness.js";

describe("readiness", () => {
  it("is ready when the ping answers, and says why when it fails, hangs or the instance drains", async () => {
    let ping: () => Promise<void> = async () => {};
    const readiness = new Readiness({ ping: () => ping(), timeoutMs: 50 });
    expect(await readiness.check()).toEqual({ ready: true, checks: { store: "ok", draining: false } });

    ping = () => Promise.reject(new Error("connection refused\nstack line"));
    expect(await readiness.check()).toEqual({
      ready: false,
      reason: "store: connection refused",
      checks: { store: "failing", draining: false },
    });

    ping = () => new Promise(() => {});
    expect(await readiness.check()).toEqual({
      ready: false,
      reason: "store: no answer to a ping within 50 ms",
      checks: { store: "timeout", draining: false },
    });

    ping = async () => {};
    readiness.drain();
    expect(await readiness.check()).toMatchObject({
      ready: false,
      reason: "draining: the instance is shutting down",
      checks: { draining: true },
    });
  });
});
