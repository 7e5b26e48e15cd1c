/**
 * One circuit breaker per webhook origin (scheme://host:port), in memory. After `threshold` consecutive
 * failed attempts the origin is open: no attempt is made until `cooldownMs` has passed, so a dead
 * webhook costs no connections, timeouts or concurrency slots. Then one probe is let through
 * (half-open): success closes the breaker, failure opens it again for twice as long (capped at 32x).
 */
export interface BreakerOptions {
  threshold: number;
  cooldownMs: number;
  clock?: () => number;
}

interface OriginState {
  failures: number;
  openUntil: number;
  /** Consecutive openings, for the growing cool-down. */
  openings: number;
  probing: boolean;
}

export type BreakerDecision = { allowed: true } | { allowed: false; retryAt: number };

const MAX_COOLDOWN_FACTOR = 32;

export class CircuitBreakers {
  private readonly origins = new Map<string, OriginState>();
  private readonly clock: () => number;

  constructor(private readonly options: BreakerOptions) {
    this.clock = options.clock ?? Date.now;
  }

  /** May an attempt to this origin run now? A half-open breaker admits one probe at a time. */
  allow(origin: string): BreakerDecision {
    const state = this.origins.get(origin);
    if (!state || state.openUntil === 0) return { allowed: true };
    const now = this.clock();
    if (now < state.openUntil) return { allowed: false, retryAt: state.openUntil };
    if (state.probing) return { allowed: false, retryAt: now + Math.min(this.options.cooldownMs, 1_000) };
    state.probing = true;
    return { allowed: true };
  }

  success(origin: string): void {
    this.origins.delete(origin);
  }

  failure(origin: string): void {
    const state = this.origins.get(origin) ?? { failures: 0, openUntil: 0, openings: 0, probing: false };
    state.failures += 1;
    if (state.probing || state.failures >= this.options.threshold) {
      state.openings += 1;
      state.openUntil = this.clock() + this.options.cooldownMs * Math.min(2 ** (state.openings - 1), MAX_COOLDOWN_FACTOR);
      state.probing = false;
    }
    this.origins.set(origin, state);
  }

  /** A probe that ended without a verdict on the origin (e.g. refused by the egress guard). */
  release(origin: string): void {
    const state = this.origins.get(origin);
    if (state) state.probing = false;
  }

  isOpen(origin: string): boolean {
    const state = this.origins.get(origin);
    return state !== undefined && state.openUntil > this.clock();
  }
}
