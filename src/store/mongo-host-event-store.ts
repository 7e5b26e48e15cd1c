import type { Collection, Db, Filter } from "mongodb";
import {
  HOST_EVENT_RETENTION_MS,
  hostEventId,
  type HostEvent,
  type HostEventQuery,
  type HostEventStore,
} from "./host-event-store.js";

interface HostEventDocument extends Omit<HostEvent, "id"> {
  _id: string;
  /** When the TTL index removes the entry. */
  expireAt: Date;
}

/**
 * The host's event log in `host_events`, one document per entry, shared by every instance on the database. A TTL
 * index removes entries HOST_EVENT_RETENTION_MS after they were written; listings read by tenant in id order.
 */
export class MongoHostEventStore implements HostEventStore {
  private readonly events: Collection<HostEventDocument>;

  constructor(
    db: Db,
    private readonly clock: () => number = Date.now,
  ) {
    this.events = db.collection<HostEventDocument>("host_events");
  }

  async init(): Promise<void> {
    await this.events.createIndexes([
      { key: { expireAt: 1 }, name: "host_events_ttl", expireAfterSeconds: 0 },
      { key: { tenant: 1, _id: 1 }, name: "host_events_tenant" },
    ]);
  }

  async append(event: Omit<HostEvent, "id">): Promise<string> {
    const now = this.clock();
    const _id = hostEventId(now);
    await this.events.insertOne({ _id, ...event, expireAt: new Date(now + HOST_EVENT_RETENTION_MS) });
    return _id;
  }

  async setCount(id: string, count: number): Promise<void> {
    await this.events.updateOne({ _id: id }, { $set: { count } });
  }

  async list(query: HostEventQuery): Promise<HostEvent[]> {
    const filter: Filter<HostEventDocument> = {
      $or: [{ tenant: query.tenant }, { tenant: { $exists: false } }],
      ...(query.type ? { type: query.type } : {}),
      ...(query.after !== undefined ? { _id: { $gt: query.after } } : {}),
    };
    const docs = await this.events.find(filter).sort({ _id: 1 }).limit(query.limit).toArray();
    return docs.map(({ _id, expireAt: _expireAt, ...rest }) => ({ id: _id, ...rest }));
  }
}
