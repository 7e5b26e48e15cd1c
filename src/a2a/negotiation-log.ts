import { callerDigest, inboundNegotiation } from "../domain/negotiation.js";
import type { Logger } from "../observability/logger.js";
import { labelSets, type Metrics } from "../observability/metrics.js";
import type { A2ANegotiationNote } from "../observability/request-notes.js";
import type { HostEvent, HostEventQuery, HostEventStore } from "../store/host-event-store.js";
export type { HostEvent };

interface Pending {
  count: number;
  written: Promise<string | undefined>;
}

/** Distinct decisions held per window; beyond it a decision is counted in the metric only (a flood of callers). */
const MAX_PENDING = 10_000;
/** Callers' address digests kept between windows (one hash per caller, not per call). */
const MAX_DIGESTS = 10_000;
/** How long identical decisions are counted into one entry. */
const WINDOW_MS = 60_000;

/**
 * `negotiation.decided` for the calls we receive (OpenWOP v2 interop.md "The audit event", openwop/openwop 2549b715),
 * on the host's own event log. The first decision of a kind (caller, tenant, versions, outcome) in a window is written
 * at once; the same one again in that window only counts, and the count is written when the window closes. So a
 * refused version is on the log within one write, and a busy caller costs one write per window, not per call.
 * `a2a.invoke`'s own negotiations are on the log of the run that made them.
 */
export class NegotiationLog {
  private pending = new Map<string, Pending>();
  private readonly digests = new Map<string, string>();
  private readonly labels = labelSets(["negotiated", "outcome", "reason"]);
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly options: {
      store: HostEventStore;
      metrics: Metrics;
      logger: Logger;
    },
  ) {
    this.timer = setInterval(() => void this.flush(), WINDOW_MS);
    this.timer.unref();
  }

  /** One inbound call's decision; `address` is the caller's network address (only its digest is kept). */
  record(decision: A2ANegotiationNote, caller: { tenant?: string | undefined; address?: string | undefined }): void {
    const event = inboundNegotiation(
      this.digestOf(caller.address ?? "unknown"),
      decision.requested,
      decision.negotiated,
    );
    // Labels from this host's own vocabulary only: what a caller asked for could mint label values at will.
    this.options.metrics.negotiations.add(1, this.labels(event.negotiated ?? "none", event.outcome, event.reason));
    // Digests, versions and reasons hold no NUL; a tenant that did could at worst share a count with another.
    const key = `${caller.tenant ?? ""}\0${event.peer}\0${event.requested}\0${event.negotiated ?? ""}\0${event.reason}`;
    const seen = this.pending.get(key);
    if (seen) {
      seen.count++;
      return;
    }
    if (this.pending.size >= MAX_PENDING) return;
    const entry: Omit<HostEvent, "id"> = {
      type: "negotiation.decided",
      at: new Date().toISOString(),
      ...(caller.tenant ? { tenant: caller.tenant } : {}),
      count: 1,
      payload: event,
    };
    const written = this.options.store.append(entry).catch((err: unknown) => {
      this.options.logger.warn(
        { err: (err as Error).message },
        "negotiation.decided not written to the host event log",
      );
      return undefined;
    });
    this.pending.set(key, { count: 1, written });
  }

  private digestOf(address: string): string {
    let digest = this.digests.get(address);
    if (digest === undefined) {
      if (this.digests.size >= MAX_DIGESTS) this.digests.clear();
      this.digests.set(address, (digest = callerDigest(address)));
    }
    return digest;
  }

  /** Closes the window: the count of each decision seen more than once is written. */
  async flush(): Promise<void> {
    const closed = this.pending;
    this.pending = new Map();
    await Promise.all(
      [...closed.values()].map(async ({ count, written }) => {
        const id = await written;
        if (id === undefined || count === 1) return;
        await this.options.store.setCount(id, count).catch((err: unknown) => {
          this.options.logger.warn({ err: (err as Error).message }, "a negotiation.decided count not written");
        });
      }),
    );
  }

  /** The host's event log as the caller's tenant may read it. */
  list(query: HostEventQuery): Promise<HostEvent[]> {
    return this.options.store.list(query);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
