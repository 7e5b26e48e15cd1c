import { describe, expect, it } from "vitest";
import { loadConfig, ConfigError } from "../../src/config/config.js";
import { rateLimited } from "../../src/domain/errors.js";
import { limitsFor, parseTenantLimits } from "../../src/domain/tenant-limits.js";
import { openwopV2ErrorBody } from "../../src/transport/errors/openwop-v2-error-exit.js";
import { openwopErrorBody } from "../../src/transport/errors/openwop-error-exit.js";
import { retryAfterOf, statusHeaders, wireErrorOf } from "../../src/transport/errors/wire-error.js";

const SETTING = {
  default: { requestsPerSecond: 50, burst: 100 },
  tenants: { acme: { runningTasks: 3, requestsPerSecond: 5 }, frozen: { tasksPerMinute: 0 } },
  keys: { "acme-batch": { requestsPerSecond: 1 } },
};

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig({ NODE_ENV: "test", ...env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe("TENANT_LIMITS", () => {
  it("the most specific place wins: key, then tenant, then default", () => {
    const parsed = parseTenantLimits(JSON.stringify(SETTING));
    if (!("limits" in parsed)) throw new Error(parsed.problems.join("; "));
    expect(limitsFor(parsed.limits, "acme", "acme-batch")).toEqual({
      requestsPerSecond: 1,
      burst: 100,
      runningTasks: 3,
    });
    expect(limitsFor(parsed.limits, "acme")).toEqual({ requestsPerSecond: 5, burst: 100, runningTasks: 3 });
    expect(limitsFor(parsed.limits, "other")).toEqual({ requestsPerSecond: 50, burst: 100 });
    expect(limitsFor(parsed.limits, "__proto__")).toEqual({ requestsPerSecond: 50, burst: 100 });
  });

  it("is loaded into the configuration, unlimited when unset", () => {
    expect(loadConfig({ NODE_ENV: "test" }).tenantLimits).toEqual({ default: {}, tenants: {}, keys: {} });
    const config = loadConfig({ NODE_ENV: "test", TENANT_LIMITS: JSON.stringify(SETTING) });
    expect(config.tenantLimits.tenants["frozen"]).toEqual({ tasksPerMinute: 0 });
  });

  it("a malformed setting stops the start, naming it", () => {
    expect(problemsOf({ TENANT_LIMITS: "{not json" })).toEqual([
      "TENANT_LIMITS must be a JSON object (it does not parse as JSON)",
    ]);
    expect(problemsOf({ TENANT_LIMITS: "[1]" })).toEqual(["TENANT_LIMITS must be a JSON object"]);
  });

  it("an unknown limit name, section or a bad value is a start problem naming its place", () => {
    const problems = problemsOf({
      TENANT_LIMITS: JSON.stringify({
        default: { requestPerSecond: 5 },
        tenants: { acme: { runningTasks: -1 }, beta: { streams: 1.5 } },
        quotas: {},
      }),
    });
    expect(problems).toContain('TENANT_LIMITS has an unknown section "quotas" (allowed: default, tenants, keys)');
    expect(problems.some((p) => p.startsWith('TENANT_LIMITS.default names an unknown limit "requestPerSecond"'))).toBe(
      true,
    );
    expect(problems.some((p) => p.startsWith("TENANT_LIMITS.tenants.acme.runningTasks must be a whole number"))).toBe(
      true,
    );
    expect(problems.some((p) => p.startsWith("TENANT_LIMITS.tenants.beta.streams must be a whole number"))).toBe(true);
  });
});

describe("the rate-limited refusal on each binding's table", () => {
  const refusal = rateLimited("tasksPerMinute", 10, 7.2);

  it("carries the limit and a whole number of seconds to wait", () => {
    expect(refusal.details).toEqual({ limit: "tasksPerMinute", allowed: 10, retryAfterSeconds: 8 });
    expect(refusal.message).toContain("retry after 8 s");
  });

  it("a limit of 0 says that the tenant gets nothing", () => {
    expect(rateLimited("runningTasks", 0, 60).message).toContain(
      "allowed no runningTasks (its runningTasks limit is 0)",
    );
  });

  it("maps to 429 + Retry-After, RESOURCE_EXHAUSTED, a JSON-RPC code and OpenWOP rate_limited (v1 and v2)", () => {
    const wire = wireErrorOf(refusal, "1.0");
    expect(wire.http).toBe(429);
    expect(wire.grpc).toBe("RESOURCE_EXHAUSTED");
    expect(wire.jsonRpc).toBe(-32029);
    expect(wire.details?.["retryAfterSeconds"]).toBe(8);
    expect(retryAfterOf(refusal)).toEqual({ "retry-after": "8" });
    expect(statusHeaders(429)).toEqual({ "retry-after": "1" });
    expect(openwopErrorBody(refusal)).toMatchObject({ status: 429, body: { error: "rate_limited" } });
    expect(openwopV2ErrorBody(refusal)).toMatchObject({ status: 429, body: { error: "rate_limited" } });
  });
});
