// The issuer's JWKS endpoint down, slow or answering garbage: tokens signed with keys already known keep
// verifying from the last good set; an unknown kid fails closed as `unauthenticated` (401), never anything
// else. A real OpenID issuer on loopback, the real authenticator, every fetch a real one.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { oidcAuthenticator } from "../../src/auth/oidc-authenticator.js";
import { DomainError } from "../../src/domain/errors.js";
import { OidcIssuer, type JwksMode } from "../support/oidc-issuer.js";

const AUDIENCE = "faults-audience";

describe("OIDC: the JWKS endpoint failing", () => {
  let idp: OidcIssuer;
  beforeAll(async () => {
    idp = await OidcIssuer.start();
  });
  afterAll(() => idp.close());

  const issuer = (url = idp.issuer) => ({
    issuer: url,
    audience: AUDIENCE,
    tenantClaim: "tenant",
    scopeClaim: "scope",
    maxTokenLifetimeSeconds: 86_400,
    allowInsecure: true,
  });
  const settings = (url?: string) => ({ issuers: [issuer(url)], jwksCooldownMs: 3_000 });
  const request = (token: string) => ({
    headers: (name: string) => (name === "authorization" ? `Bearer ${token}` : undefined),
  });
  const refusal = async (promise: Principalish): Promise<DomainError> => {
    const err = await Promise.resolve(promise).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DomainError);
    return err as DomainError;
  };
  type Principalish = ReturnType<ReturnType<typeof oidcAuthenticator>["authenticate"]>;

  it.each<JwksMode>(["down", "slow", "garbage"])(
    "%s: known kids keep working from the cache, unknown kids are 401",
    async (mode) => {
      idp.mode = "ok";
      // Every call refetches (no freshness, no cooldown): the failing endpoint is asked each time.
      const auth = oidcAuthenticator(settings(), { cacheMaxAgeMs: 0, cooldownMs: 0, timeoutMs: 300 });
      const known = await idp.token({ sub: "u", aud: AUDIENCE, tenant: "acme", scope: "runs:read" });
      expect(await auth.authenticate(request(known))).toEqual({ tenant: "acme", id: "oidc:u", scopes: ["runs:read"] });
      idp.mode = mode;
      const fetchesBefore = idp.jwksFetches;
      expect(await auth.authenticate(request(known))).toEqual({ tenant: "acme", id: "oidc:u", scopes: ["runs:read"] });
      expect(idp.jwksFetches).toBeGreaterThan(fetchesBefore);
      // A key published now cannot be fetched: it fails closed.
      const kid = `new-${mode}`;
      await idp.addKey(kid);
      const unknown = await idp.token({ sub: "u", aud: AUDIENCE, tenant: "acme" }, { kid });
      const err = await refusal(auth.authenticate(request(unknown)));
      expect(err.code).toBe("unauthenticated");
      expect(err.message).toBe("invalid token: signed by an unknown key");
      // Once the endpoint answers again, the new key verifies (refetch on an unknown kid).
      idp.mode = "ok";
      expect((await auth.authenticate(request(unknown))).tenant).toBe("acme");
    },
  );

  it("an issuer whose discovery cannot be reached: 401, not 500", async () => {
    const auth = oidcAuthenticator(settings("http://127.0.0.1:9"), { timeoutMs: 300 });
    const token = await idp.token({ sub: "u", aud: AUDIENCE, tenant: "acme" }, { issuer: "http://127.0.0.1:9" });
    const err = await refusal(auth.authenticate(request(token)));
    expect(err.code).toBe("unauthenticated");
    expect(err.message).toBe("invalid token: the issuer's keys are unavailable");
  });
});
