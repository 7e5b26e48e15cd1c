// The console's tenant rule: a key sees its own tenant; console:all-tenants (with console:operate) every
// configured tenant; the dev principal the default tenant; and the start-up phrase that names the grant.
import { describe, expect, it } from "vitest";
import { apiKeyAuthenticator, parseApiKeys } from "../../src/auth/api-key-authenticator.js";
import { DEV_PRINCIPAL, devAuthenticator } from "../../src/auth/dev-authenticator.js";
import { ConsoleAccess, consoleAccessDescription } from "../../src/console/console-access.js";

const keys = parseApiKeys(
  JSON.stringify([
    { id: "a-op", tenant: "acme", scopes: ["console:operate"], key: "0123456789abcdef-a" },
    { id: "ops-1", tenant: "ops", scopes: ["console:operate", "console:all-tenants"], key: "0123456789abcdef-o" },
    { id: "half", tenant: "globex", scopes: ["console:all-tenants"], key: "0123456789abcdef-h" },
  ]),
);
const apikey = apiKeyAuthenticator(keys).describe();
const off = devAuthenticator.describe();

describe("console access", () => {
  it("a key sees its own tenant; the all-tenants scope every configured tenant", () => {
    const access = ConsoleAccess.fromAuth(apikey);
    expect(access.tenantsFor({ tenant: "acme", id: "apikey:a-op", scopes: ["console:operate"] })).toEqual(["acme"]);
    expect(
      access.tenantsFor({ tenant: "ops", id: "apikey:ops-1", scopes: ["console:operate", "console:all-tenants"] }),
    ).toEqual(["acme", "ops", "globex"]);
    expect(access.canSee({ tenant: "acme", id: "apikey:a-op", scopes: ["console:operate"] }, "globex")).toBe(false);
  });

  it('auth off: the dev principal sees the default tenant, and scopes "*" are no all-tenants grant', () => {
    const access = ConsoleAccess.fromAuth(off);
    expect(access.tenantsFor(DEV_PRINCIPAL)).toEqual(["default"]);
    expect(access.tenantsFor({ tenant: "other", id: "x", scopes: "*" })).toEqual(["other"]);
  });

  it("names the grant for the start-up line", () => {
    expect(consoleAccessDescription(apikey, { console: true })).toBe(
      "console: per-tenant; all tenants for keys ops-1 (console:all-tenants)",
    );
    expect(consoleAccessDescription(apiKeyAuthenticator(keys.slice(0, 1)).describe(), { console: true })).toBe(
      "console: per-tenant; no key sees all tenants (console:all-tenants)",
    );
    expect(consoleAccessDescription(off, { console: true })).toBe("console: tenant default (auth off)");
    expect(consoleAccessDescription(apikey, { console: false })).toBe("console: off");
  });

  it('refuses tenant "*": tenants are compared exactly everywhere, never a wildcard', () => {
    expect(() =>
      parseApiKeys(JSON.stringify([{ id: "x", tenant: "*", scopes: ["runs:read"], key: "0123456789abcdef" }])),
    ).toThrow('API_KEYS[0].tenant "*" is not allowed');
  });
});
