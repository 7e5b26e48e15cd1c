import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";

const KEYS = '[{"id":"ops","tenant":"acme","scopes":["runs:read"],"key":"0123456789abcdef"}]';

describe("configuration", () => {
  it("has working defaults for a fresh machine", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      env: "development",
      port: 8080,
      host: "127.0.0.1",
      publicUrl: "http://localhost:8080",
      store: "auto",
    });
    // No DEFAULT_SKILL or BUILTIN_WORKFLOWS: the loader decides (echo, the demos); no identity: the host's own.
    expect(config.defaultSkill).toBeUndefined();
    expect(config.builtinWorkflows).toBeUndefined();
    expect(config.agentCard.identity).toEqual({});
    expect(config.retentionMs).toBe(7 * 24 * 3600 * 1000);
  });

  it("client certificates alone are a way in, as API keys or OIDC tokens are: production asks for no API_KEYS then", () => {
    const principals = '[{"subject":"CN=ops","tenant":"ops","scopes":["runs:read"]}]';
    expect(() => loadConfig({ NODE_ENV: "production", TLS_CLIENT_PRINCIPALS: principals })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: "production", TLS_CLIENT_PRINCIPALS: principals })).not.toThrow(
      "AUTH=on needs",
    );
    expect(() => loadConfig({ NODE_ENV: "production" })).toThrow("AUTH=on needs API_KEYS");
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
    [{ NODE_ENV: "production" }, "AUTH=on needs API_KEYS"],
    [{ NODE_ENV: "production", AUTH: "off" }, "NODE_ENV=production does not allow AUTH=off"],
    [{ NODE_ENV: "production", API_KEYS: KEYS }, "NODE_ENV=production needs MONGODB_URI"],
    [{ NODE_ENV: "production", API_KEYS: KEYS, MONGODB_URI: "mongodb://db" }, "NODE_ENV=production needs PUBLIC_URL"],
    [{ AUTH: "magic" }, "AUTH must be one of off, on"],
    [{ AUTH_OIDC_ISSUER: "https://idp.example" }, "AUTH_OIDC_ISSUER needs AUTH_OIDC_AUDIENCE"],
    [{ AUTH_OIDC_AUDIENCE: "host" }, "AUTH_OIDC_AUDIENCE needs AUTH_OIDC_ISSUER"],
    [
      { AUTH_OIDC_ISSUER: "http://idp.example", AUTH_OIDC_AUDIENCE: "host" },
      "AUTH_OIDC_ISSUER must be an https:// URL",
    ],
    [
      {
        AUTH_OIDC_ISSUER: "http://idp.example",
        AUTH_OIDC_AUDIENCE: "host",
        AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
      },
      "AUTH_OIDC_ISSUER must be an https:// URL (http:// only on loopback",
    ],
    [
      {
        NODE_ENV: "production",
        AUTH_OIDC_ISSUER: "http://127.0.0.1:1",
        AUTH_OIDC_AUDIENCE: "host",
        AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
      },
      "AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS is test-only and is refused when NODE_ENV=production",
    ],
    [{ API_KEYS: "not json" }, "API_KEYS must be a JSON array"],
    [
      { API_KEYS: '[{"id":"a","tenant":"t","scopes":["runs:fly"],"key":"0123456789abcdef"}]' },
      "API_KEYS[0].scopes must be an array of",
    ],
    [
      { API_KEYS: '[{"id":"a","tenant":"t","scopes":[],"key":"short"}]' },
      'API_KEYS[0] needs "key" (at least 16 characters)',
    ],
    [
      { API_KEYS: '[{"id":"a","tenant":"*","scopes":["console:operate"],"key":"0123456789abcdef"}]' },
      'API_KEYS[0].tenant "*" is not allowed',
    ],
    [{ MAX_BODY_BYTES: "12" }, "MAX_BODY_BYTES must be a whole number between 1024"],
    [{ AGENT_CARD_BARE: "0.2" }, "AGENT_CARD_BARE must be one of auto, hybrid, 1.0, 0.3"],
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
        loadConfig({
          PORT: "http",
          STORE: "redis",
          PUSH_SIGNING_KEY: "short",
          A2A_PEER_MAX_ATTEMPTS: "0",
          INTERRUPT_TOKEN_TTL_SECONDS: "0",
          AUTH: "magic",
        });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    expect(problems).toHaveLength(6);
    for (const name of [
      "PORT",
      "STORE",
      "PUSH_SIGNING_KEY",
      "A2A_PEER_MAX_ATTEMPTS",
      "INTERRUPT_TOKEN_TTL_SECONDS",
      "AUTH",
    ]) {
      expect(
        problems.some((p) => p.startsWith(name)),
        name,
      ).toBe(true);
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
    for (const name of [
      "MONGODB_URI",
      "PUBLIC_URL",
      "INTERRUPT_TOKEN_KEYS",
      "PUSH_ENCRYPTION_KEY",
      "PUSH_SIGNING_KEY",
      "SIGNING_KEYS",
      "A2A_PEER_CALLBACK_KEY",
    ])
      expect(err.message, name).toContain(name);
    expect(err.problems.filter((p) => p.startsWith("NODE_ENV=production"))).toHaveLength(6);
  });

  it("reads the agent's identity (AGENT_*)", () => {
    const config = loadConfig({
      AGENT_NAME: "Acme travel agent",
      AGENT_DESCRIPTION: "Books trips.",
      AGENT_VERSION: "2.1.0",
      AGENT_PROVIDER_ORGANIZATION: "Acme",
      AGENT_PROVIDER_URL: "https://acme.example",
      AGENT_DOCUMENTATION_URL: "https://acme.example/docs/",
      AGENT_ICON_URL: "https://acme.example/icon.png",
    });
    expect(config.agentCard.identity).toEqual({
      name: "Acme travel agent",
      description: "Books trips.",
      version: "2.1.0",
      provider: { organization: "Acme", url: "https://acme.example" },
      documentationUrl: "https://acme.example/docs/",
      iconUrl: "https://acme.example/icon.png",
    });
  });

  it("reports a half provider and every bad AGENT_* URL in one error", () => {
    let error: unknown;
    try {
      loadConfig({
        AGENT_PROVIDER_ORGANIZATION: "Acme",
        AGENT_DOCUMENTATION_URL: "docs.acme.example",
        AGENT_ICON_URL: "ftp://acme.example/icon.png",
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(3);
    expect(problems.join("\n")).toMatch(/AGENT_PROVIDER_ORGANIZATION needs AGENT_PROVIDER_URL/);
    expect(problems.join("\n")).toMatch(/AGENT_DOCUMENTATION_URL must be an absolute http\(s\) URL/);
    expect(problems.join("\n")).toMatch(/AGENT_ICON_URL must be an absolute http\(s\) URL/);
    expect(() => loadConfig({ AGENT_PROVIDER_URL: "https://acme.example" })).toThrow(
      /AGENT_PROVIDER_URL needs AGENT_PROVIDER_ORGANIZATION/,
    );
  });

  it("reads BUILTIN_WORKFLOWS: a list of demo and conformance, or none alone", () => {
    expect(loadConfig({ BUILTIN_WORKFLOWS: "demo, conformance" }).builtinWorkflows).toEqual(["demo", "conformance"]);
    expect(loadConfig({ BUILTIN_WORKFLOWS: "none" }).builtinWorkflows).toEqual([]);
    expect(() => loadConfig({ BUILTIN_WORKFLOWS: "none,demo" })).toThrow(/BUILTIN_WORKFLOWS=none cannot be combined/);
    expect(() => loadConfig({ BUILTIN_WORKFLOWS: "demos" })).toThrow(
      /BUILTIN_WORKFLOWS must be a comma-separated list of demo, conformance, or none \(got "demos"\)/,
    );
    expect(loadConfig({ DEFAULT_SKILL: "router" }).defaultSkill).toBe("router");
  });
});
