import { REFUSAL_REASONS, type RefusalReason } from "./limit-refusals.js";

/** Tenants with usage of their own; later ones share `other`, so a host with many tenants keeps few series. */
export const TENANT_USAGE_SERIES = 50;
export const OTHER_TENANTS = "other";

/**
 * Counts over a sliding window (requests in the last second, tasks in the last minute), estimated from two fixed
 * windows: the current one, and the previous one weighted by how much of it still lies within the window.
 */
class RateWindow {
  private start = 0;
  private current = 0;
  private previous = 0;

  constructor(private readonly windowMs: number) {}

  add(now: number): void {
    this.roll(now);
    this.current++;
  }

  last(now: number): number {
    this.roll(now);
    const stillIn = 1 - (now - this.start) / this.windowMs;
    return Math.round(this.current + this.previous * stillIn);
  }

  private roll(now: number): void {
    if (now - this.start < this.windowMs) return;
    this.previous = now - this.start < 2 * this.windowMs ? this.current : 0;
    this.current = 0;
    this.start = now - ((now - this.start) % this.windowMs);
  }
}

/** One tenant's usage on this instance, as the metrics and the console show it. */
export interface TenantUsageView {
  tenant: string;
  /** Requests admitted in the last second; only where a requestsPerSecond limit counts them (else absent). */
  requestsLastSecond?: number;
  /** Tasks admitted in the last minute. */
  tasksLastMinute: number;
  /** The tenant's tasks that had not ended, as the store counted them at its last admitted creation here. */
  runningTasks?: number;
  /** Streams open on this instance. */
  streams: number;
  /** Refusals by reason since start. */
  refusals: Record<RefusalReason, number>;
}

class Usage {
  readonly requests = new RateWindow(1_000);
  /** Whether a requestsPerSecond limit counted this tenant's requests: calls of an unlimited one are not counted. */
  requestsCounted = false;
  readonly tasks = new RateWindow(60_000);
  running: number | undefined;
  streams = 0;
  readonly refusals = Object.fromEntries(REFUSAL_REASONS.map((r) => [r, 0])) as Record<RefusalReason, number>;
}

/**
 * Usage per tenant on this instance: the tenants TENANT_LIMITS names and the first TENANT_USAGE_SERIES others seen
 * have their own row; the rest add up under `other`.
 */
export class TenantUsage {
  private readonly rows = new Map<string, Usage>();
  private others = 0;

  constructor(
    named: readonly string[],
    private readonly clock: () => number,
  ) {
    for (const tenant of named) this.rows.set(tenant, new Usage());
  }

  private row(tenant: string): Usage {
    let row = this.rows.get(tenant);
    if (row) return row;
    if (this.others < TENANT_USAGE_SERIES) {
      this.others++;
      this.rows.set(tenant, (row = new Usage()));
      return row;
    }
    let other = this.rows.get(OTHER_TENANTS);
    if (!other) this.rows.set(OTHER_TENANTS, (other = new Usage()));
    return other;
  }

  /** The row a tenant's usage is kept under (`other` past the first ones). */
  labelOf(tenant: string): string {
    return this.rows.has(tenant) || this.others < TENANT_USAGE_SERIES ? tenant : OTHER_TENANTS;
  }

  request(tenant: string): void {
    const row = this.row(tenant);
    row.requestsCounted = true;
    row.requests.add(this.clock());
  }

  task(tenant: string, running: number | undefined): void {
    const row = this.row(tenant);
    row.tasks.add(this.clock());
    if (running !== undefined) row.running = running;
  }

  stream(tenant: string, delta: 1 | -1): void {
    this.row(tenant).streams += delta;
  }

  refused(tenant: string, reason: RefusalReason): void {
    this.row(tenant).refusals[reason]++;
  }

  view(): TenantUsageView[] {
    const now = this.clock();
    return [...this.rows].map(([tenant, row]) => ({
      tenant,
      ...(row.requestsCounted ? { requestsLastSecond: row.requests.last(now) } : {}),
      tasksLastMinute: row.tasks.last(now),
      ...(row.running !== undefined ? { runningTasks: row.running } : {}),
      streams: row.streams,
      refusals: { ...row.refusals },
    }));
  }
}
