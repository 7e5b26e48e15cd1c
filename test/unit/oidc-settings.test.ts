// AUTH_OIDC_ISSUERS (or its file) and the one-issuer shorthand: what each setting gives, and every mistake named.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_JWKS_COOLDOWN_MS,
  DEFAULT_MAX_TOKEN_LIFETIME_SECONDS,
  loadOidcSettings,
} from "../../src/auth/oidc-settings.js";
import { ConfigError, loadConfig } from "../../src/config/config.js";

const dir = mkdtempSync(join(tmpdir(), "oidc-settings-"));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const CA = file("ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");

describe("OIDC issuer settings", () => {
  it("the shorthand is one issuer with the defaults: a day's token lifetime, a 3 s JWKS cool-down", () => {
    expect(loadOidcSettings({ AUTH_OIDC_ISSUER: "https://idp.example", AUTH_OIDC_AUDIENCE: "host" }, false)).toEqual({
      issuers: [
        {
          issuer: "https://idp.example",
          audience: "host",
          tenantClaim: "tenant",
          scopeClaim: "scope",
          maxTokenLifetimeSeconds: DEFAULT_MAX_TOKEN_LIFETIME_SECONDS,
          allowInsecure: false,
        },
      ],
      jwksCooldownMs: DEFAULT_JWKS_COOLDOWN_MS,
    });
    expect(DEFAULT_MAX_TOKEN_LIFETIME_SECONDS).toBe(86_400);
    expect(DEFAULT_JWKS_COOLDOWN_MS).toBe(3_000);
  });

  it("several issuers, each with its own audience, claims, groups, CA and lifetime; the globals are defaults", () => {
    const issuers = [
      {
        issuer: "https://a.example",
        audience: "aud-a",
        tenantClaim: "org",
        groupsClaim: "groups",
        groupScopes: { readers: ["runs:read"] },
        maxTokenLifetimeSeconds: 600,
      },
      { issuer: "https://b.example/realms/x", audience: "aud-b", caFile: CA },
    ];
    const settings = loadOidcSettings(
      {
        AUTH_OIDC_ISSUERS: JSON.stringify(issuers),
        AUTH_OIDC_MAX_TOKEN_LIFETIME_SECONDS: "3600",
        AUTH_OIDC_JWKS_COOLDOWN_MS: "1000",
      },
      false,
    );
    expect(settings).toEqual({
      issuers: [
        {
          issuer: "https://a.example",
          audience: "aud-a",
          tenantClaim: "org",
          scopeClaim: "scope",
          groupsClaim: "groups",
          groupScopes: { readers: ["runs:read"] },
          maxTokenLifetimeSeconds: 600,
          allowInsecure: false,
        },
        {
          issuer: "https://b.example/realms/x",
          audience: "aud-b",
          tenantClaim: "tenant",
          scopeClaim: "scope",
          ca: expect.stringContaining("BEGIN CERTIFICATE"),
          caFile: CA,
          maxTokenLifetimeSeconds: 3600,
          allowInsecure: false,
        },
      ],
      jwksCooldownMs: 1000,
    });
    // The same list from a file (a mounted secret or ConfigMap).
    expect(
      loadOidcSettings(
        {
          AUTH_OIDC_ISSUERS_FILE: file("issuers.json", JSON.stringify(issuers)),
          AUTH_OIDC_MAX_TOKEN_LIFETIME_SECONDS: "3600",
          AUTH_OIDC_JWKS_COOLDOWN_MS: "1000",
        },
        false,
      ),
    ).toEqual(settings);
    // AUTH_OIDC_CA_FILE is every issuer's CA unless it names its own.
    const withDefaultCa = loadOidcSettings(
      { AUTH_OIDC_ISSUER: "https://idp.example", AUTH_OIDC_AUDIENCE: "host", AUTH_OIDC_CA_FILE: CA },
      false,
    );
    expect(withDefaultCa).toMatchObject({
      issuers: [{ caFile: CA, ca: expect.stringContaining("BEGIN CERTIFICATE") }],
    });
  });

  const one = { issuer: "https://a.example", audience: "aud" };
  it.each<[string, Record<string, string>, string]>([
    [
      "both spellings",
      { AUTH_OIDC_ISSUER: "https://a.example", AUTH_OIDC_AUDIENCE: "x", AUTH_OIDC_ISSUERS: JSON.stringify([one]) },
      "set AUTH_OIDC_ISSUERS (several issuers) or AUTH_OIDC_ISSUER (one), not both",
    ],
    [
      "inline and file",
      { AUTH_OIDC_ISSUERS: JSON.stringify([one]), AUTH_OIDC_ISSUERS_FILE: "/nowhere.json" },
      "set AUTH_OIDC_ISSUERS or AUTH_OIDC_ISSUERS_FILE, not both",
    ],
    ["not JSON", { AUTH_OIDC_ISSUERS: "{issuer: a}" }, "AUTH_OIDC_ISSUERS must be a JSON array of"],
    ["empty list", { AUTH_OIDC_ISSUERS: "[]" }, "AUTH_OIDC_ISSUERS must be a non-empty JSON array of issuers"],
    [
      "a file that is not there",
      { AUTH_OIDC_ISSUERS_FILE: "/nowhere/issuers.json" },
      "AUTH_OIDC_ISSUERS_FILE /nowhere/issuers.json cannot be read (ENOENT)",
    ],
    [
      "an unknown field",
      { AUTH_OIDC_ISSUERS: JSON.stringify([{ ...one, audiences: ["x"] }]) },
      'AUTH_OIDC_ISSUERS[0]: unknown field "audiences"',
    ],
    [
      "no audience",
      { AUTH_OIDC_ISSUERS: JSON.stringify([{ issuer: "https://a.example" }]) },
      "AUTH_OIDC_ISSUERS[0].audience must be a non-empty string",
    ],
    [
      "http issuer",
      { AUTH_OIDC_ISSUERS: JSON.stringify([{ ...one, issuer: "http://a.example" }]) },
      "AUTH_OIDC_ISSUERS[0].issuer must be an https:// URL",
    ],
    [
      "the same issuer twice",
      { AUTH_OIDC_ISSUERS: JSON.stringify([one, { ...one, audience: "other" }]) },
      "AUTH_OIDC_ISSUERS names the issuer https://a.example twice",
    ],
    [
      "groups without their claim",
      { AUTH_OIDC_ISSUERS: JSON.stringify([{ ...one, groupScopes: { ops: ["runs:read"] } }]) },
      "AUTH_OIDC_ISSUERS[0].groupScopes needs groupsClaim",
    ],
    [
      "a group granting an unknown scope",
      {
        AUTH_OIDC_ISSUERS: JSON.stringify([
          { ...one, groupsClaim: "groups", groupScopes: { ops: ["runs:everything"] } },
        ]),
      },
      "AUTH_OIDC_ISSUERS[0].groupScopes must map group names to arrays of runs:create",
    ],
    [
      "a fixed tenant that is no tenant id",
      { AUTH_OIDC_ISSUERS: JSON.stringify([{ ...one, tenant: "acme/eu" }]) },
      "AUTH_OIDC_ISSUERS[0].tenant must be a tenant id",
    ],
    [
      "a fixed tenant and a tenant claim",
      { AUTH_OIDC_ISSUERS: JSON.stringify([{ ...one, tenant: "acme", tenantClaim: "org" }]) },
      "AUTH_OIDC_ISSUERS[0].tenant and tenantClaim exclude each other",
    ],
    [
      "a lifetime out of range",
      { AUTH_OIDC_ISSUERS: JSON.stringify([{ ...one, maxTokenLifetimeSeconds: 5 }]) },
      "AUTH_OIDC_ISSUERS[0].maxTokenLifetimeSeconds must be a whole number of seconds between 60 and 31536000",
    ],
    [
      "a global lifetime out of range",
      {
        AUTH_OIDC_ISSUER: "https://a.example",
        AUTH_OIDC_AUDIENCE: "x",
        AUTH_OIDC_MAX_TOKEN_LIFETIME_SECONDS: "forever",
      },
      'AUTH_OIDC_MAX_TOKEN_LIFETIME_SECONDS must be a whole number between 60 and 31536000 (got "forever")',
    ],
    [
      "a cool-down out of range",
      { AUTH_OIDC_ISSUER: "https://a.example", AUTH_OIDC_AUDIENCE: "x", AUTH_OIDC_JWKS_COOLDOWN_MS: "0" },
      'AUTH_OIDC_JWKS_COOLDOWN_MS must be a whole number between 100 and 300000 (got "0")',
    ],
    [
      "a CA file that is not there",
      { AUTH_OIDC_ISSUERS: JSON.stringify([{ ...one, caFile: "/nowhere/ca.pem" }]) },
      "AUTH_OIDC_ISSUERS[0].caFile /nowhere/ca.pem cannot be read (ENOENT)",
    ],
    [
      "a CA file with no certificate",
      {
        AUTH_OIDC_ISSUER: "https://a.example",
        AUTH_OIDC_AUDIENCE: "x",
        AUTH_OIDC_CA_FILE: file("not-pem.txt", "hello"),
      },
      "AUTH_OIDC_CA_FILE " + join(dir, "not-pem.txt") + " holds no PEM certificate",
    ],
  ])("%s: a start problem naming the setting", (_name, env, message) => {
    const problems = loadOidcSettings(env, false);
    expect(Array.isArray(problems)).toBe(true);
    expect((problems as string[]).join("\n")).toContain(message);
    // The host refuses to start with the same words.
    let err: unknown;
    try {
      loadConfig(env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems.join("\n")).toContain(message);
  });

  it("a list and its file turn auth on like the shorthand does", () => {
    const config = loadConfig({ AUTH_OIDC_ISSUERS: JSON.stringify([one]) });
    expect(config.auth.mode).toBe("on");
    expect(config.auth.oidc?.issuers.map((i) => i.issuer)).toEqual(["https://a.example"]);
  });
});
