import { describe, expect, it } from "vitest";
import { SubscriptionQueue } from "../../src/engine/subscription-queue.js";

describe("per-subscriber buffer", () => {
  it("delivers in order and ends when closed", async () => {
    const q = new SubscriptionQueue<number>(3);
    q.push(1);
    q.push(2);
    const next = q.next();
    expect(await next).toBe(1);
    expect(await q.next()).toBe(2);
    const waiting = q.next();
    q.push(3);
    expect(await waiting).toBe(3);
    q.close();
    expect(await q.next()).toBeUndefined();
  });

  it("drops a subscriber that falls too far behind, with an error that says how to recover", async () => {
    const q = new SubscriptionQueue<number>(2);
    q.push(1);
    q.push(2);
    q.push(3);
    await expect(q.next()).rejects.toThrow(/fell more than 2 updates behind .* resubscribe/);
  });
});
