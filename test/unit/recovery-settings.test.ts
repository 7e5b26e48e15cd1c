import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import { recoveryEvidence } from "../../src/engine/recovery-settings.js";

describe("poison work settings (RECOVERY_MAX_ATTEMPTS) and the RFC 0158 evidence derived from them", () => {
  it("defaults to 5 and reads RECOVERY_MAX_ATTEMPTS", () => {
    expect(loadConfig({}).recovery).toEqual({ maxAttempts: 5 });
    expect(loadConfig({ RECOVERY_MAX_ATTEMPTS: "1" }).recovery).toEqual({ maxAttempts: 1 });
  });

  it.each(["0", "-1", "many", "1001"])(
    "refuses RECOVERY_MAX_ATTEMPTS=%s: the bound must be finite and at least one execution",
    (value) => {
      expect(() => loadConfig({ RECOVERY_MAX_ATTEMPTS: value })).toThrow(ConfigError);
      expect(() => loadConfig({ RECOVERY_MAX_ATTEMPTS: value })).toThrow(
        "RECOVERY_MAX_ATTEMPTS must be a whole number between 1 and 1000",
      );
    },
  );

  it("derives the recovery bound from the lease settings that enforce it (TTL + heartbeat), with its terms", () => {
    const config = loadConfig({ LEASE_TTL_MS: "5000", LEASE_HEARTBEAT_MS: "1000", RECOVERY_MAX_ATTEMPTS: "3" });
    expect(recoveryEvidence(config.leases, config.recovery)).toEqual({
      rfc: "0158",
      recoveryBounds: [
        {
          class: "task-execution-lease",
          bound: 6_000,
          terms: [
            { name: "leaseTtlMs", ms: 5_000 },
            { name: "leaseHeartbeatMs", ms: 1_000 },
          ],
        },
      ],
      attemptBound: {
        maxAttempts: 3,
        maxExecutions: 4,
        setting: "RECOVERY_MAX_ATTEMPTS",
        terminalError: "poison_exhausted",
      },
    });
  });
});
