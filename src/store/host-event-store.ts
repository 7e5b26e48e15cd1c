import type { NegotiationDecided } from "../domain/negotiation.js";

/**
 * One entry of the host's own event log (OpenWOP v2 interop.md "The audit event", openwop/openwop 2549b715): what
 * happened to the host rather than to one run. Identical decisions within one window are one entry with a count.
 */
export interface HostEvent {
  /** Sorts in the order the entries were written by one instance; the cursor of a listing. */
  id: string;
  type: "negotiation.decided";
  /** When the first of the decisions counted here was made. */
  at: string;
  /** The caller's tenant; absent when the decision came before the caller was known (a refused version). */
  tenant?: string;
  /** How many identical decisions this entry stands for (1 until its window closes). */
  count: number;
  payload: NegotiationDecided;
}

export interface HostEventQuery {
  /** The caller's tenant: its entries and those of no tenant. */
  tenant: string;
  type?: HostEvent["type"];
  /** Entries after this id. */
  after?: string;
  limit: number;
}

/** The host's event log: appended by every instance, kept for HOST_EVENT_RETENTION_MS, read per tenant. */
export interface HostEventStore {
  append(event: Omit<HostEvent, "id">): Promise<string>;
  /** Sets the final count of an entry when its window closes. */
  setCount(id: string, count: number): Promise<void>;
  list(query: HostEventQuery): Promise<HostEvent[]>;
}

/** How long the host's event log keeps an entry. */
export const HOST_EVENT_RETENTION_MS = 30 * 24 * 3_600_000;

let sequence = 0;
/** Time first (base 36, fixed width), then a per-process sequence and a random tail: ids from one instance sort in order. */
export function hostEventId(now: number = Date.now()): string {
  sequence = (sequence + 1) % 1_679_616;
  const random = Math.floor(Math.random() * 1_679_616).toString(36);
  return `${now.toString(36).padStart(9, "0")}${sequence.toString(36).padStart(4, "0")}${random.padStart(4, "0")}`;
}

export function visibleTo(event: Omit<HostEvent, "id">, query: HostEventQuery): boolean {
  return (
    (event.tenant === undefined || event.tenant === query.tenant) &&
    (query.type === undefined || event.type === query.type)
  );
}

export class MemoryHostEventStore implements HostEventStore {
  private readonly events: HostEvent[] = [];

  constructor(private readonly clock: () => number = Date.now) {}

  async append(event: Omit<HostEvent, "id">): Promise<string> {
    const cutoff = this.clock() - HOST_EVENT_RETENTION_MS;
    while (this.events.length > 0 && Date.parse(this.events[0]!.at) < cutoff) this.events.shift();
    const id = hostEventId(this.clock());
    this.events.push({ id, ...structuredClone(event) });
    return id;
  }

  async setCount(id: string, count: number): Promise<void> {
    const found = this.events.find((e) => e.id === id);
    if (found) found.count = count;
  }

  async list(query: HostEventQuery): Promise<HostEvent[]> {
    return this.events
      .filter((e) => (query.after === undefined || e.id > query.after) && visibleTo(e, query))
      .slice(0, query.limit)
      .map((e) => structuredClone(e));
  }
}
