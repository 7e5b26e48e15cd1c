import { describe, expect, it } from "vitest";
import { backoffDelay, decideRetry, isRetryable } from "../../src/domain/retry-policy.js";
import { PeerCallError } from "../../src/peer/peer-http-client.js";

describe("retry policy", () => {
  it("retries only a failure that says it may succeed later", () => {
    expect(isRetryable(new PeerCallError("down", "connection", true))).toBe(true);
    expect(isRetryable(new PeerCallError("no", "http", false))).toBe(false);
    expect(isRetryable({ ok: false, retryable: true })).toBe(true);
    // A failure that does not say (a plain error, a string) is not retried.
    expect(isRetryable(new Error("boom"))).toBe(false);
    expect(isRetryable("retryable")).toBe(false);
    expect(isRetryable(undefined)).toBe(false);
  });

  it("jitters inside the configured band: equal jitter by default, ±20 % for peer calls", () => {
    const policy = { baseMs: 500, maxMs: 10_000, maxAttempts: 5 };
    expect(backoffDelay(policy, 2, () => 0)).toBe(500);
    expect(backoffDelay(policy, 2, () => 1)).toBe(1_000);
    const peer = { ...policy, jitter: { min: 0.8, max: 1.2 } };
    expect(backoffDelay(peer, 1, () => 0)).toBe(400);
    expect(backoffDelay(peer, 1, () => 1)).toBe(600);
    expect(backoffDelay(peer, 10, () => 0.5)).toBe(10_000);
  });

  it("decides: retry with a delay, or give up and say why (attempt-count only when there is no age budget)", () => {
    const policy = { baseMs: 100, maxMs: 1_000, maxAttempts: 3, jitter: { min: 1, max: 1 } };
    const transient = { retryable: true };
    expect(decideRetry(policy, transient, 1)).toEqual({ retry: true, delayMs: 100 });
    expect(decideRetry(policy, transient, 2)).toEqual({ retry: true, delayMs: 200 });
    expect(decideRetry(policy, transient, 3)).toEqual({ retry: false, reason: "max-attempts" });
    expect(decideRetry(policy, { retryable: false }, 1)).toEqual({ retry: false, reason: "not-retryable" });
    expect(decideRetry(policy, transient, 1, { firstAt: 0, now: 10 ** 9 })).toEqual({ retry: true, delayMs: 100 });
    expect(decideRetry({ ...policy, maxAgeMs: 1_000 }, transient, 1, { firstAt: 0, now: 1_000 })).toEqual({
      retry: false,
      reason: "max-age",
    });
  });
});
