/**
 * One circuit breaker per webhook origin (scheme://host:port), in memory. After `threshold` consecutive
 * failed attempts the origin is open: no attempt is made until `cooldownMs` has passed, so a dead
 * webhook costs no connections, timeouts or concurrency slots. Then one probe is let through
 * (half-open): success closes the breaker, failure opens it again for one more cool-down.
 *
 * Only a probe's failure re-opens an open breaker. Attempts that were already in flight when it opened
 * fail too (the receiver is down for them as well), but they say nothing new: counting them as openings
 * is what once stretched a 20 s outage into 52 s of silence after the receiver came back. The cool-down
 * does not grow either, so pending deliveries resume at most one cool-down (plus their retry interval)
 * after the receiver is back; a dead receiver costs one probe per cool-down.
 */
export interface BreakerOptions {
  threshold: number;
  cooldownMs: number;
  clock?: () => number;
}

interface OriginState {
  /** Consecutive failures while closed. */
  failures: number;
  /** 0 while closed; otherwise when the next probe may go. */
  openUntil: number;
  /** Openings since the origin last succeeded (one per threshold breach or failed probe). */
  openings: number;
  probing: boolean;
}

/** `probe`: this attempt is the half-open probe; hand it back to `failure`/`release`. */
export type BreakerDecision = { allowed: true; probe: boolean } | { allowed: false; retryAt: number };

export class CircuitBreakers {
  private readonly origins = new Map<string, OriginState>();
  private readonly clock: () => number;

  constructor(private readonly options: BreakerOptions) {
    this.clock = options.clock ?? Date.now;
  }

  /** May an attempt to this origin run now? A half-open breaker admits one probe at a time. */
  allow(origin: string): BreakerDecision {
    const state = this.origins.get(origin);
    if (!state || state.openUntil === 0) return { allowed: true, probe: false };
    const now = this.clock();
    if (now < state.openUntil) return { allowed: false, retryAt: state.openUntil };
    if (state.probing) return { allowed: false, retryAt: now + Math.min(this.options.cooldownMs, 1_000) };
    state.probing = true;
    return { allowed: true, probe: true };
  }

  /** Any answer from the origin closes its breaker (a late in-flight attempt as well as the probe). */
  success(origin: string): void {
    this.origins.delete(origin);
  }

  failure(origin: string, probe: boolean): void {
    const state = this.origins.get(origin) ?? { failures: 0, openUntil: 0, openings: 0, probing: false };
    this.origins.set(origin, state);
    if (probe) return this.open(state);
    // Open already: an attempt started before it opened; its failure is old news.
    if (state.openUntil !== 0) return;
    state.failures += 1;
    if (state.failures >= this.options.threshold) this.open(state);
  }

  /** An attempt that ended without a verdict on the origin (e.g. refused by the egress guard). */
  release(origin: string, probe: boolean): void {
    const state = this.origins.get(origin);
    if (state && probe) state.probing = false;
  }

  isOpen(origin: string): boolean {
    const state = this.origins.get(origin);
    return state !== undefined && state.openUntil > this.clock();
  }

  /** How many times the origin's breaker opened since it last answered (for logs and tests). */
  openings(origin: string): number {
    return this.origins.get(origin)?.openings ?? 0;
  }

  private open(state: OriginState): void {
    state.openings += 1;
    state.failures = 0;
    state.probing = false;
    state.openUntil = this.clock() + this.options.cooldownMs;
  }
}
