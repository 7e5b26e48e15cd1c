import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSecretFiles } from "../../src/config/secret-files.js";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import { EnvReader } from "../../src/domain/env-settings.js";
import { LimitResolution } from "../../src/limits/limit-resolution.js";
import { readTenantLimitSettings } from "../../src/limits/limit-settings.js";
import { TokenBucket } from "../../src/limits/token-bucket.js";

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return [...err.problems];
  }
}

describe("TENANT_LIMITS", () => {
  it("unset: a single user's host keeps today's behaviour (nothing limited but push configs, at PUSH_MAX_CONFIGS_PER_TASK)", () => {
    expect(loadConfig({}).limits).toEqual({ default: { pushConfigsPerTask: 10 }, tenants: {}, keys: {} });
    expect(loadConfig({ PUSH_MAX_CONFIGS_PER_TASK: "3" }).limits.default).toEqual({ pushConfigsPerTask: 3 });
    // The default entry's own pushConfigsPerTask wins over PUSH_MAX_CONFIGS_PER_TASK.
    const own = loadConfig({
      PUSH_MAX_CONFIGS_PER_TASK: "3",
      TENANT_LIMITS: JSON.stringify({ default: { pushConfigsPerTask: 5 } }),
    });
    expect(own.limits.default).toEqual({ pushConfigsPerTask: 5 });
  });

  it("TENANT_LIMITS_FILE: the same JSON from a file (a mounted ConfigMap); setting both is a problem", () => {
    const path = join(mkdtempSync(join(tmpdir(), "limits-")), "limits.json");
    writeFileSync(path, `${JSON.stringify({ tenants: { acme: { runningTasks: 3 } } })}\n`);
    const read = readSecretFiles({ TENANT_LIMITS_FILE: path });
    expect(read.problems).toEqual([]);
    expect(loadConfig(read.env).limits.tenants).toEqual({ acme: { runningTasks: 3 } });
    expect(readSecretFiles({ TENANT_LIMITS_FILE: path, TENANT_LIMITS: "{}" }).problems).toEqual([
      "TENANT_LIMITS and TENANT_LIMITS_FILE are both set; set one of them",
    ]);
  });

  it("malformed JSON is a start problem naming the setting", () => {
    expect(problemsOf({ TENANT_LIMITS: "{default:" })).toEqual([expect.stringMatching(/^TENANT_LIMITS is not JSON: /)]);
    expect(problemsOf({ TENANT_LIMITS: "[1]" })).toEqual([expect.stringContaining("TENANT_LIMITS: must be an object")]);
  });

  it("an unknown limit name or section is a start problem naming where it is, with the likely name", () => {
    expect(
      problemsOf({
        TENANT_LIMITS: JSON.stringify({ tenants: { acme: { runningTask: 3 } }, tenant: {}, keys: { ci: { rps: 1 } } }),
      }),
    ).toEqual([
      'TENANT_LIMITS: tenants.acme.runningTask is not a limit (did you mean "runningTasks"?); the limits are requestsPerSecond, burst, runningTasks, tasksPerMinute, streams, pushConfigsPerTask',
      'TENANT_LIMITS: unknown section "tenant" (did you mean "tenants"?); the sections are default, tenants, keys',
      "TENANT_LIMITS: keys.ci.rps is not a limit; the limits are requestsPerSecond, burst, runningTasks, tasksPerMinute, streams, pushConfigsPerTask",
    ]);
  });

  it("a value must be a number from 0 (whole for counts), or null", () => {
    expect(
      problemsOf({
        TENANT_LIMITS: JSON.stringify({
          default: { requestsPerSecond: -1, runningTasks: 1.5, streams: "ten", pushConfigsPerTask: 5000 },
          tenants: { acme: "lots" },
        }),
      }),
    ).toEqual([
      "TENANT_LIMITS: default.requestsPerSecond must be a number of 0 or more, or null for no limit (got -1)",
      "TENANT_LIMITS: default.runningTasks must be a whole number of 0 or more, or null for no limit (got 1.5)",
      'TENANT_LIMITS: default.streams must be a whole number of 0 or more, or null for no limit (got "ten")',
      "TENANT_LIMITS: default.pushConfigsPerTask must be a whole number from 0 to 1000, or null for no limit (got 5000)",
      "TENANT_LIMITS: tenants.acme must be an object of limits (requestsPerSecond, burst, runningTasks, tasksPerMinute, streams, pushConfigsPerTask)",
    ]);
    // Fractions of a rate and 0 are fine.
    expect(
      problemsOf({ TENANT_LIMITS: JSON.stringify({ default: { requestsPerSecond: 0.5, runningTasks: 0 } }) }),
    ).toEqual([]);
  });

  it("each limit comes from the most specific entry that names it: the key's, the tenant's, the default; null lifts it", () => {
    const settings = EnvReader.load(
      {
        TENANT_LIMITS: JSON.stringify({
          default: { runningTasks: 10, requestsPerSecond: 50, streams: 20 },
          tenants: { acme: { runningTasks: 100, streams: null } },
          keys: { ci: { requestsPerSecond: 5, burst: 10 }, "batch-client": { runningTasks: 2 } },
        }),
      },
      (reader) => readTenantLimitSettings(reader, 10),
    );
    const limits = new LimitResolution(settings);
    const ci = limits.of({ tenant: "acme", id: "apikey:ci", scopes: [] });
    expect(ci.requestsPerSecond).toEqual({ value: 5, source: "key", bucket: "key:ci", who: 'the API key "ci"' });
    expect(ci.runningTasks).toEqual({ value: 100, source: "tenant", bucket: "tenant:acme", who: 'tenant "acme"' });
    expect(ci.streams).toBeUndefined();
    expect(ci.pushConfigsPerTask?.source).toBe("default");
    // An OAuth client is looked up by its client id.
    const token = limits.of({ tenant: "globex", id: "oidc:svc-1", clientId: "batch-client", scopes: [] });
    expect(token.runningTasks).toMatchObject({ value: 2, source: "key", who: 'the OAuth client "batch-client"' });
    expect(token.requestsPerSecond).toMatchObject({ value: 50, source: "default", bucket: "tenant:globex" });
  });
});

describe("OVERLOAD_*", () => {
  it("defaults on, 0 turns a check off, a bad value is a start problem", () => {
    expect(loadConfig({}).overload).toEqual({ eventLoopDelayMs: 500, storeLatencyMs: 2000 });
    expect(loadConfig({ OVERLOAD_STORE_LATENCY_MS: "0" }).overload.storeLatencyMs).toBe(0);
    expect(problemsOf({ OVERLOAD_EVENT_LOOP_DELAY_MS: "soon" })).toEqual([
      'OVERLOAD_EVENT_LOOP_DELAY_MS must be a whole number between 0 and 600000 (got "soon")',
    ]);
  });
});

describe("TokenBucket", () => {
  it("serves its capacity at once, then one per 1/rate, and says how long to wait", () => {
    const bucket = new TokenBucket(2, 0);
    expect(bucket.take(0, 1, 2)).toBe(0);
    expect(bucket.take(0, 1, 2)).toBe(0);
    expect(bucket.take(0, 1, 2)).toBe(1);
    expect(bucket.take(400, 1, 2)).toBe(1);
    expect(bucket.take(1_000, 1, 2)).toBe(0);
    // A slow rate: the wait is its period.
    const slow = new TokenBucket(1, 0);
    expect(slow.take(0, 0.1, 1)).toBe(0);
    expect(slow.take(0, 0.1, 1)).toBe(10);
    slow.refund(1);
    expect(slow.take(0, 0.1, 1)).toBe(0);
  });
});
