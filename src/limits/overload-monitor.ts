import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import type { OverloadSettings } from "./limit-settings.js";

/** How often the monitor judges (one window of event-loop samples, one store ping). */
export const OVERLOAD_WINDOW_MS = 1_000;
/** How finely the event-loop delay is sampled (as the runtime metrics do: Node's 10 ms default would hide stalls). */
const RESOLUTION_MS = 10;

export interface OverloadMonitorOptions {
  settings: OverloadSettings;
  /** One round trip to the store (its readiness ping); its time is the store's latency. */
  ping: () => Promise<void>;
  clock?: () => number;
}

/**
 * Overload, judged once a window: the event loop's p90 delay over the window past OVERLOAD_EVENT_LOOP_DELAY_MS (a
 * loop late a tenth of the time, not one stall: a GC pause or the process descheduled once does not shed), or
 * the store's ping slower than OVERLOAD_STORE_LATENCY_MS (a ping still unanswered at the window's end counts as
 * that slow). While either holds, the instance sheds: new tasks are refused first (503 + Retry-After), and
 * `/readyz` says so; replies to waiting tasks, cancels, reads and approvals are still served. It stops shedding at
 * the first window under both limits. A limit of 0 turns its check off.
 */
export class OverloadMonitor {
  private readonly delay: IntervalHistogram | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Why the last window's event loop was too late, or undefined. */
  private loopReason: string | undefined;
  /** When the ping in flight started (undefined: none in flight), and what the last one took. */
  private pingStarted: number | undefined;
  private lastPingMs = 0;
  private stopped = false;
  private readonly clock: () => number;

  constructor(private readonly options: OverloadMonitorOptions) {
    this.clock = options.clock ?? (() => performance.now());
    if (options.settings.eventLoopDelayMs > 0) this.delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  }

  /**
   * Why new tasks are refused now, or undefined. The store's part is read live: a ping out longer than the limit
   * sheds at once (a stalled store), and a slow one is followed by the next at once, so a store that recovers stops
   * the shedding one quick round trip later.
   */
  get shedding(): string | undefined {
    const store = this.storeReason();
    if (!store) return this.loopReason;
    return this.loopReason ? `${this.loopReason}; ${store}` : store;
  }

  start(): void {
    const { eventLoopDelayMs, storeLatencyMs } = this.options.settings;
    if (eventLoopDelayMs === 0 && storeLatencyMs === 0) return;
    this.stopped = false;
    this.delay?.enable();
    this.timer = setInterval(() => this.judge(), OVERLOAD_WINDOW_MS).unref();
    if (storeLatencyMs > 0) this.ping();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.delay?.disable();
  }

  /** Ends a window: judges the event loop over it, starts the next (a fresh histogram), and pings unless one is out. */
  judge(): void {
    const { eventLoopDelayMs, storeLatencyMs } = this.options.settings;
    this.loopReason = undefined;
    if (this.delay && this.delay.count > 0) {
      // Node measures the time between its sampling timer's runs: the delay is what lies beyond the resolution.
      const p90 = Math.max(0, this.delay.percentile(90) / 1e6 - RESOLUTION_MS);
      if (p90 > eventLoopDelayMs)
        this.loopReason = `event-loop delay p90 ${Math.round(p90)} ms over OVERLOAD_EVENT_LOOP_DELAY_MS=${eventLoopDelayMs}`;
      this.delay.reset();
    }
    if (storeLatencyMs > 0 && this.pingStarted === undefined) this.ping();
  }

  private storeReason(): string | undefined {
    const limit = this.options.settings.storeLatencyMs;
    if (limit === 0) return undefined;
    const waiting = this.pingStarted !== undefined ? this.clock() - this.pingStarted : 0;
    const latency = Math.max(this.lastPingMs, waiting);
    return latency > limit
      ? `store latency ${Math.round(latency)} ms over OVERLOAD_STORE_LATENCY_MS=${limit}`
      : undefined;
  }

  private ping(): void {
    const started = (this.pingStarted = this.clock());
    const done = () => {
      this.lastPingMs = this.clock() - started;
      this.pingStarted = undefined;
      // A slow answer is checked again at once: the shedding ends as soon as the store answers in time.
      if (!this.stopped && this.lastPingMs > this.options.settings.storeLatencyMs) this.ping();
    };
    this.options.ping().then(done, done);
  }
}
