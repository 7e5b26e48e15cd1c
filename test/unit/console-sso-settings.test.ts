// CONSOLE_OIDC_*: which issuer the console signs in with, and every start problem in words that name the setting
// (and never the client secret).
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";

const A = "https://idp-a.example";
const B = "https://idp-b.example";
const issuers = (...names: string[]) => JSON.stringify(names.map((issuer) => ({ issuer, audience: "host" })));
const problemsOf = (env: Record<string, string>): readonly string[] => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe("console sign-in settings", () => {
  it("the only configured issuer by default; the redirect URI under PUBLIC_URL; the secret never printed", () => {
    const config = loadConfig({
      AUTH_OIDC_ISSUERS: issuers(A),
      CONSOLE_OIDC_CLIENT_ID: "console",
      CONSOLE_OIDC_CLIENT_SECRET: "s3cr3t-value",
      PUBLIC_URL: "https://host.example/",
    });
    expect(config.consoleSso).toMatchObject({
      clientId: "console",
      scopes: "openid",
      redirectUri: "https://host.example/console/auth/callback",
      issuer: { issuer: A },
    });
    expect(config.consoleSso!.clientSecret!.reveal()).toBe("s3cr3t-value");
    expect(JSON.stringify(config)).not.toContain("s3cr3t-value");
    // The one-issuer shorthand counts too.
    expect(
      loadConfig({ AUTH_OIDC_ISSUER: A, AUTH_OIDC_AUDIENCE: "host", CONSOLE_OIDC_CLIENT_ID: "console" }).consoleSso
        ?.issuer.issuer,
    ).toBe(A);
    // Off without a client id.
    expect(loadConfig({ AUTH_OIDC_ISSUERS: issuers(A) }).consoleSso).toBeUndefined();
  });

  it("names one of several issuers", () => {
    expect(
      loadConfig({ AUTH_OIDC_ISSUERS: issuers(A, B), CONSOLE_OIDC_CLIENT_ID: "console", CONSOLE_OIDC_ISSUER: B })
        .consoleSso?.issuer.issuer,
    ).toBe(B);
  });

  it("refuses to start: several issuers and none named; an unconfigured one named; no issuer; a secret or issuer without a client id", () => {
    expect(problemsOf({ AUTH_OIDC_ISSUERS: issuers(A, B), CONSOLE_OIDC_CLIENT_ID: "console" })).toEqual([
      `CONSOLE_OIDC_ISSUER must name the console's issuer: several are configured (${A}, ${B})`,
    ]);
    expect(
      problemsOf({ AUTH_OIDC_ISSUERS: issuers(A), CONSOLE_OIDC_CLIENT_ID: "console", CONSOLE_OIDC_ISSUER: B }),
    ).toEqual([`CONSOLE_OIDC_ISSUER "${B}" is not a configured issuer (configured: ${A})`]);
    expect(problemsOf({ CONSOLE_OIDC_CLIENT_ID: "console" })).toEqual([
      "CONSOLE_OIDC_CLIENT_ID needs an OIDC issuer (AUTH_OIDC_ISSUER or AUTH_OIDC_ISSUERS): the console's token is checked like every access token",
    ]);
    const secretAlone = problemsOf({ AUTH_OIDC_ISSUERS: issuers(A), CONSOLE_OIDC_CLIENT_SECRET: "s3cr3t-value" });
    expect(secretAlone).toEqual([
      "CONSOLE_OIDC_CLIENT_SECRET needs CONSOLE_OIDC_CLIENT_ID (the console's client at the identity provider)",
    ]);
    expect(problemsOf({ AUTH_OIDC_ISSUERS: issuers(A), CONSOLE_OIDC_ISSUER: A })).toEqual([
      "CONSOLE_OIDC_ISSUER needs CONSOLE_OIDC_CLIENT_ID (the console's client at the identity provider)",
    ]);
  });
});
