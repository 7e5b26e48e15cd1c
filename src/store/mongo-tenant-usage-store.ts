import type { Collection, Db, IndexDescription } from "mongodb";
import { TERMINAL_RUN_STATUSES } from "../domain/run-status.js";
import type { InstanceBeat, TenantUsageStore } from "./tenant-usage-store.js";

interface HoldDocument {
  _id: string;
  tenant: string;
  expireAt: Date;
}

interface InstanceDocument {
  _id: string;
  expireAt: Date;
  /** A list, not an object: bucket names hold tenants' and keys' ids, which may have dots. */
  streams: Array<{ bucket: string; open: number }>;
}

const HOLD_INDEXES: IndexDescription[] = [
  { key: { tenant: 1, expireAt: 1 }, name: "tenant_expire" },
  // MongoDB drops what a dead creator or instance left once it has expired (the counts already ignore it).
  { key: { expireAt: 1 }, name: "hold_ttl", expireAfterSeconds: 0 },
];
const INSTANCE_INDEXES: IndexDescription[] = [{ key: { expireAt: 1 }, name: "instance_ttl", expireAfterSeconds: 0 }];

/**
 * Tenant usage in MongoDB: `running_task_holds` (places held by creators, counted with the `tasks` heads that are
 * not terminal: the `tenant_status` index) and `instances` (one beat document per live instance).
 */
export class MongoTenantUsageStore implements TenantUsageStore {
  private readonly holds: Collection<HoldDocument>;
  private readonly instances: Collection<InstanceDocument>;
  private readonly tasks: Collection<{ tenant: string; status: string }>;

  constructor(
    db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.holds = db.collection<HoldDocument>("running_task_holds");
    this.instances = db.collection<InstanceDocument>("instances");
    this.tasks = db.collection("tasks");
  }

  async init(): Promise<void> {
    await Promise.all([this.holds.createIndexes(HOLD_INDEXES), this.instances.createIndexes(INSTANCE_INDEXES)]);
  }

  async holdRunningTask(tenant: string, holdId: string, until: Date): Promise<number> {
    await this.holds.insertOne({ _id: holdId, tenant, expireAt: until });
    // Places first, then tasks: a place given back between the two reads has its task stored before it went,
    // so the task read sees it (counted twice at worst, never missed).
    const held = await this.holds.countDocuments({ tenant, expireAt: { $gt: this.now() } });
    const running = await this.tasks.countDocuments({ tenant, status: { $nin: [...TERMINAL_RUN_STATUSES] } });
    return held + running;
  }

  async releaseRunningTask(holdId: string): Promise<void> {
    await this.holds.deleteOne({ _id: holdId });
  }

  async beat(own: InstanceBeat, now: Date): Promise<InstanceBeat[]> {
    await this.instances.updateOne(
      { _id: own.instanceId },
      {
        $set: {
          expireAt: own.expiresAt,
          streams: Object.entries(own.streams).map(([bucket, open]) => ({ bucket, open })),
        },
      },
      { upsert: true },
    );
    const live = await this.instances.find({ expireAt: { $gt: now } }).toArray();
    return live.map((d) => ({
      instanceId: d._id,
      expiresAt: d.expireAt,
      streams: Object.fromEntries((d.streams ?? []).map((s) => [s.bucket, s.open])),
    }));
  }
}
