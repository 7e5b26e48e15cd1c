/** Readiness of this instance: why it should (not) get traffic. */
export interface ReadinessReport {
  ready: boolean;
  /** Set when not ready: what an operator should look at. */
  reason?: string;
  checks: { store: "ok" | "failing" | "timeout"; draining: boolean; leases?: "lost"; shedding?: true };
  /** What kind of store serves, whether tasks survive a restart, and the fallback warning when there is one. */
  details?: StoreDetails;
}

export interface StoreDetails {
  store: "memory" | "mongodb";
  durable: boolean;
  /** Set when STORE=auto found no MongoDB and fell back to memory: the start-up warning, line by line. */
  warning?: string[];
}

export interface ReadinessOptions {
  /** Answers when the store can serve commands (a MongoDB ping); rejects otherwise. */
  ping: () => Promise<void>;
  /** How long the ping may take before the store counts as unavailable. */
  timeoutMs: number;
  /** Why the instance lost its task-lease heartbeat (it takes no leases then), or undefined while it beats. */
  leaseProblem?: () => string | undefined;
  /** Why the instance sheds new tasks under overload (src/limits/overload-monitor.ts), or undefined. */
  shedding?: () => string | undefined;
  /** Reported with every answer (ready or not), so a non-durable instance says so where operators look. */
  details?: StoreDetails;
}

/**
 * Liveness is "the process serves" (answering at all proves it); readiness is "send me traffic": the store
 * answers a ping within the timeout, its lease heartbeat beats, the instance is not draining for shutdown, and it
 * is not shedding new tasks under overload.
 */
export class Readiness {
  private draining = false;

  constructor(private readonly options: ReadinessOptions) {}

  /** From now on the instance reports not ready, so load balancers stop sending new calls. */
  drain(): void {
    this.draining = true;
  }

  /** `sheddingIsReady`: shedding new tasks is reported in `checks` but does not make the instance not ready. */
  async check(options: { sheddingIsReady?: boolean } = {}): Promise<ReadinessReport> {
    if (this.draining)
      return {
        ready: false,
        reason: "draining: the instance is shutting down",
        checks: { store: "ok", draining: true },
        details: this.options.details,
      };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), this.options.timeoutMs);
    });
    try {
      const result = await Promise.race([this.options.ping().then(() => "ok" as const), timeout]);
      if (result === "timeout")
        return {
          ready: false,
          reason: `store: no answer to a ping within ${this.options.timeoutMs} ms`,
          checks: { store: "timeout", draining: false },
          details: this.options.details,
        };
      const leaseProblem = this.options.leaseProblem?.();
      if (leaseProblem)
        return {
          ready: false,
          reason: leaseProblem,
          checks: { store: "ok", draining: false, leases: "lost" },
          details: this.options.details,
        };
      // Shedding: new tasks are refused here (replies, reads, cancels still served), so a balancer sends them elsewhere.
      const shedding = this.options.shedding?.();
      if (shedding && options.sheddingIsReady)
        return { ready: true, checks: { store: "ok", draining: false, shedding: true }, details: this.options.details };
      if (shedding)
        return {
          ready: false,
          reason: `shedding new tasks: ${shedding}`,
          checks: { store: "ok", draining: false, shedding: true },
          details: this.options.details,
        };
      return { ready: true, checks: { store: "ok", draining: false }, details: this.options.details };
    } catch (err) {
      return {
        ready: false,
        reason: `store: ${(err as Error).message.split("\n")[0]}`,
        checks: { store: "failing", draining: false },
        details: this.options.details,
      };
    } finally {
      clearTimeout(timer);
    }
  }
}
