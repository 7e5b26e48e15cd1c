/**
 * What the store keeps for tenant limits (src/limits/): places held for tasks about to be created, counted with a
 * tenant's non-terminal tasks (the exact cross-instance running-task cap), and each live instance's beat (how many
 * instances share a rate, and the streams each holds).
 */

/** One instance's beat: alive until `expiresAt`, holding `streams` open streams per limited bucket. */
export interface InstanceBeat {
  instanceId: string;
  expiresAt: Date;
  streams: Readonly<Record<string, number>>;
}

export interface TenantUsageStore {
  /**
   * Holds a place for a task of `tenant` about to be created (until `until` at most: a creator that dies leaves
   * it to expire), then answers the tenant's non-terminal tasks plus every place held, this one included. The
   * place is written before anything is counted, so of two creators racing for the last place at least one sees
   * the other's (as a place or as its task): the cap is never passed, though both may be refused.
   */
  holdRunningTask(tenant: string, holdId: string, until: Date): Promise<number>;
  /** Gives a place back: its task is stored (and counted as a task now), or its creation failed. */
  releaseRunningTask(holdId: string): Promise<void>;
  /** Publishes this instance's beat and answers the live instances' (its own included). */
  beat(own: InstanceBeat, now: Date): Promise<InstanceBeat[]>;
}

/** The in-memory store's: one process, so the holds and the beat are its own. */
export class MemoryTenantUsageStore implements TenantUsageStore {
  private readonly holds = new Map<string, { tenant: string; until: number }>();

  constructor(
    private readonly activeTasks: (tenant: string) => number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async holdRunningTask(tenant: string, holdId: string, until: Date): Promise<number> {
    this.holds.set(holdId, { tenant, until: until.getTime() });
    const now = this.now().getTime();
    let held = 0;
    for (const [id, hold] of this.holds) {
      if (hold.until <= now) this.holds.delete(id);
      else if (hold.tenant === tenant) held++;
    }
    return this.activeTasks(tenant) + held;
  }

  async releaseRunningTask(holdId: string): Promise<void> {
    this.holds.delete(holdId);
  }

  async beat(own: InstanceBeat): Promise<InstanceBeat[]> {
    return [own];
  }
}
