import { randomUUID } from "node:crypto";
import type { EnvReader } from "../domain/env-settings.js";

/** Task execution leases (README "Running several instances"): who this instance is, and the lease timing. */
export interface LeaseSettings {
  /** Owner id written on the leases this process takes: INSTANCE_ID, else random per process. */
  instanceId: string;
  /** How long a lease lasts without renewal: an instance that dies leaves its tasks for at most this long. */
  ttlMs: number;
  /** How often held leases are renewed and free ones looked for (failover). */
  heartbeatMs: number;
}

export const DEFAULT_LEASE_SETTINGS = { ttlMs: 10_000, heartbeatMs: 3_000 } as const;

/** INSTANCE_ID, LEASE_TTL_MS, LEASE_HEARTBEAT_MS. */
export function readLeaseSettings(env: EnvReader): LeaseSettings {
  const raw = env.raw("INSTANCE_ID");
  if (raw !== undefined && !/^[A-Za-z0-9._:-]{1,128}$/.test(raw))
    env.problem(`INSTANCE_ID must be 1 to 128 letters, digits, ".", "_", ":" or "-" (got "${raw}")`);
  const ttlMs = env.int("LEASE_TTL_MS", DEFAULT_LEASE_SETTINGS.ttlMs, 100, 600_000);
  const heartbeatMs = env.int("LEASE_HEARTBEAT_MS", DEFAULT_LEASE_SETTINGS.heartbeatMs, 10, 300_000);
  // Two missed renewals must still leave the lease alive, or a loaded but healthy owner loses its tasks.
  if (ttlMs <= 2 * heartbeatMs) {
    env.problem(
      `LEASE_TTL_MS (${ttlMs}) must be more than twice LEASE_HEARTBEAT_MS (${heartbeatMs}), so a lease survives one late heartbeat`,
    );
  }
  return { instanceId: raw ?? `${randomUUID()}`, ttlMs, heartbeatMs };
}
