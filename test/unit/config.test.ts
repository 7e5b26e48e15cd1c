import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";

const KEYS = '[{"id":"ops","tenant":"acme","scopes":["runs:read"],"key":"0123456789abcdef"}]';

describe("configuration", () => {
  it("has working defaults for a fresh machine", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ env: "development", port: 8080, host: "127.0.0.1", publicUrl: "http://localhost:8080", store: "auto", defaultSkill: "echo" });
    expect(config.retentionMs).toBe(7 * 24 * 3600 * 1000);
  });

  it.each([
    [{ PORT: "http" }, "PORT must be a whole number between 0 and 65535"],
    [{ PORT: "70000" }, "PORT must be a whole number"],
    [{ STORE: "redis" }, "STORE must be one of auto, mongodb, memory"],
    [{ STORE: "mongodb" }, "STORE=mongodb needs MONGODB_URI"],
    [{ MONGODB_URI: "postgres://x" }, "MONGODB_URI must start with mongodb://"],
    [{ PUBLIC_URL: "not a url" }, "PUBLIC_URL must be an absolute http(s) URL"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL must be one of"],
    [{ NODE_ENV: "staging" }, "NODE_ENV must be one of development, test, production"],
    [{ NODE_ENV: "production" }, "AUTH=apikey needs API_KEYS"],
    [{ NODE_ENV: "production", AUTH: "off" }, "NODE_ENV=production does not allow AUTH=off"],
    [{ NODE_ENV: "production", API_KEYS: KEYS }, "NODE_ENV=production needs MONGODB_URI"],
    [{ NODE_ENV: "production", API_KEYS: KEYS, MONGODB_URI: "mongodb://db" }, "NODE_ENV=production needs PUBLIC_URL"],
    [{ AUTH: "magic" }, "AUTH must be one of off, apikey"],
    [{ API_KEYS: "not json" }, "API_KEYS must be a JSON array"],
    [{ API_KEYS: '[{"id":"a","tenant":"t","scopes":["runs:fly"],"key":"0123456789abcdef"}]' }, "API_KEYS[0].scopes must be an array of"],
    [{ API_KEYS: '[{"id":"a","tenant":"t","scopes":[],"key":"short"}]' }, 'API_KEYS[0] needs "key" (at least 16 characters)'],
    [{ MAX_BODY_BYTES: "12" }, "MAX_BODY_BYTES must be a whole number between 1024"],
    [{ AGENT_CARD_BARE: "0.3" }, "AGENT_CARD_BARE must be one of auto, hybrid, 1.0"],
    [{ AGENT_CARD_MAX_AGE_SECONDS: "-1" }, "AGENT_CARD_MAX_AGE_SECONDS must be a whole number"],
  ])("refuses %j with a clear message", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it.each([
    [{}, "openwop_a2a"],
    [{ MONGODB_URI: "mongodb://db:27017" }, "openwop_a2a"],
    [{ MONGODB_URI: "mongodb://db:27017/" }, "openwop_a2a"],
    [{ MONGODB_URI: "mongodb://u:p%2F@db1,db2:27017/prod?replicaSet=rs0" }, "prod"],
    [{ MONGODB_URI: "mongodb+srv://cluster.example/dev" }, "dev"],
    [{ MONGODB_URI: "mongodb://db/prod", MONGODB_DB: "override" }, "override"],
    [{ MONGODB_DB: "only_db" }, "only_db"],
  ])("uses the database of %j: %s (MONGODB_DB only when set, else the URI's path)", (env, db) => {
    expect(loadConfig(env).mongodbDb).toBe(db);
  });

  it("reports every problem of one start in one error, not just the first", () => {
    const err = (() => {
      try {
        loadConfig({ PORT: "http", STORE: "redis", PUSH_SIGNING_KEY: "short", A2A_PEER_MAX_ATTEMPTS: "0", INTERRUPT_TOKEN_TTL_SECONDS: "0", AUTH: "magic" });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    expect(problems).toHaveLength(6);
    for (const name of ["PORT", "STORE", "PUSH_SIGNING_KEY", "A2A_PEER_MAX_ATTEMPTS", "INTERRUPT_TOKEN_TTL_SECONDS", "AUTH"]) {
      expect(problems.some((p) => p.startsWith(name)), name).toBe(true);
      expect((err as Error).message).toContain(name);
    }
    expect((err as Error).message).toMatch(/^6 configuration problems:\n- /);
  });

  it("in production names every missing required variable at once", () => {
    const err = (() => {
      try {
        loadConfig({ NODE_ENV: "production", API_KEYS: KEYS });
      } catch (e) {
        return e;
      }
      return undefined;
    })() as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    for (const name of ["MONGODB_URI", "PUBLIC_URL", "INTERRUPT_TOKEN_KEYS", "PUSH_ENCRYPTION_KEY", "PUSH_SIGNING_KEY"]) expect(err.message, name).toContain(name);
    expect(err.problems.filter((p) => p.startsWith("NODE_ENV=production"))).toHaveLength(4);
  });
});
