import type { EnvReader } from "../domain/env-settings.js";
import type { LeaseSettings } from "./lease-settings.js";

/** Poison work (docs/operating.md "Poison work"): how many times a node may die with its instance. */
export interface RecoverySettings {
  /**
   * Executions of one node, run alone on their instance, that may end with the death of that instance (out of
   * memory, a native crash, SIGKILL) before the run fails with `poison_exhausted` instead of running the node
   * again. A death not run alone is not counted (the node runs alone next), so at most maxAttempts + 1 runs.
   */
  maxAttempts: number;
}

export const DEFAULT_RECOVERY_SETTINGS: RecoverySettings = { maxAttempts: 5 };

/** The run error code of a task whose node kept killing its instance. */
export const POISON_EXHAUSTED = "poison_exhausted";

/** RECOVERY_MAX_ATTEMPTS. */
export function readRecoverySettings(env: EnvReader): RecoverySettings {
  return { maxAttempts: env.int("RECOVERY_MAX_ATTEMPTS", DEFAULT_RECOVERY_SETTINGS.maxAttempts, 1, 1_000) };
}

/**
 * The durability evidence OpenWOP RFC 0158 asks a host to declare, derived from the settings that enforce it
 * (§B.5), in the shape of its evidence-bundle row (`recoveryBounds[]`: class, bound, terms): after an instance
 * dies, its tasks' leases expire at most LEASE_TTL_MS after their last renewal, and a survivor's takeover scan
 * runs every LEASE_HEARTBEAT_MS, so another instance resumes the work within their sum. `attemptBound` is
 * §C.8's: a node that kills its instance is charged at most RECOVERY_MAX_ATTEMPTS deaths (each while it ran alone)
 * and so runs at most RECOVERY_MAX_ATTEMPTS + 1 times (`maxExecutions`: its one uncharged death first), then the
 * run fails.
 */
export function recoveryEvidence(
  leases: Pick<LeaseSettings, "ttlMs" | "heartbeatMs">,
  recovery: RecoverySettings,
): Record<string, unknown> {
  return {
    rfc: "0158",
    recoveryBounds: [
      {
        class: "task-execution-lease",
        bound: leases.ttlMs + leases.heartbeatMs,
        terms: [
          // Term names in the bundle schema's grammar (^[a-z][A-Za-z0-9._-]{0,63}$): LEASE_TTL_MS, LEASE_HEARTBEAT_MS.
          { name: "leaseTtlMs", ms: leases.ttlMs },
          { name: "leaseHeartbeatMs", ms: leases.heartbeatMs },
        ],
      },
    ],
    attemptBound: {
      maxAttempts: recovery.maxAttempts,
      maxExecutions: recovery.maxAttempts + 1,
      setting: "RECOVERY_MAX_ATTEMPTS",
      terminalError: POISON_EXHAUSTED,
    },
  };
}
