/**
 * A token bucket: `capacity` tokens at most, refilled at `ratePerSecond`; a call takes one. The rate and capacity
 * are passed at each take, so an instance's share of a limit (1/N of it, N the live instances) can change as
 * instances come and go without rebuilding the bucket.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(capacity: number, now: number) {
    this.tokens = capacity;
    this.last = now;
  }

  /** 0 when a token was taken; else the seconds (at least 1) until one will be there. */
  take(now: number, ratePerSecond: number, capacity: number): number {
    this.tokens = Math.min(capacity, this.tokens + (Math.max(0, now - this.last) / 1000) * ratePerSecond);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - this.tokens) / ratePerSecond));
  }

  /** Gives back a token taken for work that was then refused for another reason. */
  refund(capacity: number): void {
    this.tokens = Math.min(capacity, this.tokens + 1);
  }
}
