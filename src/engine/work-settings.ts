import type { EnvReader } from "../domain/env-settings.js";

/** Fair work on an instance (docs/operating.md "Fair work"): how much node work runs at once, and each tenant's share. */
export interface WorkSettings {
  /** Node executions (handlers, peer calls, service calls) running at once on this instance; more wait their turn. */
  concurrency: number;
  /** Each tenant's weight in the round robin (turns served per round); a tenant not named has weight 1. */
  tenantWeights: Readonly<Record<string, number>>;
  /**
   * How long a suspect waiting to run alone holds new work back so the instance drains; past it, new work runs
   * again and the suspect takes the instance the first time nothing runs (a long handler does not freeze it).
   */
  isolationWaitMs: number;
}

export const DEFAULT_WORK_SETTINGS: WorkSettings = { concurrency: 128, tenantWeights: {}, isolationWaitMs: 30_000 };

const MIN_WEIGHT = 0.01;
const MAX_WEIGHT = 1_000;

/** WORK_CONCURRENCY, WORK_TENANT_WEIGHTS (`tenant=weight,…`), RECOVERY_ISOLATION_WAIT_MS. */
export function readWorkSettings(env: EnvReader): WorkSettings {
  const tenantWeights: Record<string, number> = {};
  for (const entry of env.list("WORK_TENANT_WEIGHTS")) {
    const at = entry.lastIndexOf("=");
    const tenant = at > 0 ? entry.slice(0, at).trim() : "";
    const weight = at > 0 ? Number(entry.slice(at + 1)) : Number.NaN;
    if (!tenant || !Number.isFinite(weight) || weight < MIN_WEIGHT || weight > MAX_WEIGHT)
      env.problem(
        `WORK_TENANT_WEIGHTS must be a comma-separated list of tenant=weight with weights from ${MIN_WEIGHT} to ${MAX_WEIGHT} (got "${entry}")`,
      );
    else tenantWeights[tenant] = weight;
  }
  return {
    concurrency: env.int("WORK_CONCURRENCY", DEFAULT_WORK_SETTINGS.concurrency, 1, 100_000),
    tenantWeights,
    isolationWaitMs: env.int("RECOVERY_ISOLATION_WAIT_MS", DEFAULT_WORK_SETTINGS.isolationWaitMs, 0, 3_600_000),
  };
}
