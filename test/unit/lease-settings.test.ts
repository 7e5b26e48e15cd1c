import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";

describe("task lease settings", () => {
  it("defaults: a random instance id per process, a 10 s lease renewed every 3 s", () => {
    const first = loadConfig({}).leases;
    expect(first).toMatchObject({ ttlMs: 10_000, heartbeatMs: 3_000 });
    expect(first.instanceId).toMatch(/^[0-9a-f-]{36}$/);
    expect(loadConfig({}).leases.instanceId).not.toBe(first.instanceId);
  });

  it("INSTANCE_ID, LEASE_TTL_MS and LEASE_HEARTBEAT_MS override them", () => {
    expect(loadConfig({ INSTANCE_ID: "pod-1", LEASE_TTL_MS: "5000", LEASE_HEARTBEAT_MS: "1000" }).leases).toEqual({
      instanceId: "pod-1",
      ttlMs: 5_000,
      heartbeatMs: 1_000,
    });
  });

  it.each([
    [{ LEASE_TTL_MS: "6000" }, "LEASE_TTL_MS (6000) must be more than twice LEASE_HEARTBEAT_MS (3000)"],
    [
      { LEASE_TTL_MS: "2000", LEASE_HEARTBEAT_MS: "1000" },
      "LEASE_TTL_MS (2000) must be more than twice LEASE_HEARTBEAT_MS (1000)",
    ],
    [{ LEASE_TTL_MS: "ten seconds" }, "LEASE_TTL_MS must be a whole number between 100 and 600000"],
    [{ LEASE_HEARTBEAT_MS: "0" }, "LEASE_HEARTBEAT_MS must be a whole number between 10 and 300000"],
    [{ INSTANCE_ID: "pod 1" }, "INSTANCE_ID must be 1 to 128 letters, digits"],
  ])("refuses %j with a clear message", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
