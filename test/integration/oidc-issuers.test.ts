// Several identity providers, each checked on its own terms; an issuer behind a private CA; keys the IdP rotates
// in, heard within the cool-down; a flood of random kids, at most one JWKS fetch per cool-down. Real OpenID
// issuers on loopback (http, and https with a CA made by openssl), the real settings loader and app.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { oidcAuthenticator, type OidcObserver } from "../../src/auth/oidc-authenticator.js";
import { loadOidcSettings, type OidcSettings } from "../../src/auth/oidc-settings.js";
import type { Principal } from "../../src/auth/principal.js";
import { DomainError } from "../../src/domain/errors.js";
import { OidcIssuer } from "../support/oidc-issuer.js";
import { startTestApp } from "../support/start-server.js";
import { TestCertificates } from "../support/test-certificates.js";

const bearer = (token: string) => ({
  headers: (name: string) => (name === "authorization" ? `Bearer ${token}` : undefined),
});
const settingsOf = (env: Record<string, string>): OidcSettings => {
  const settings = loadOidcSettings({ AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true", ...env }, false);
  if (!settings || Array.isArray(settings)) throw new Error(`bad settings: ${String(settings)}`);
  return settings;
};
const refusal = async (
  answer: Principal | Promise<Principal>,
  code: DomainError["code"] = "unauthenticated",
): Promise<DomainError> => {
  const err = await Promise.resolve(answer).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DomainError);
  expect((err as DomainError).code).toBe(code);
  return err as DomainError;
};
const recording = (): OidcObserver & { refusals: string[]; tls: string[] } => {
  const refusals: string[] = [];
  const tls: string[] = [];
  return {
    refusals,
    tls,
    refused: (issuer, reason) => void refusals.push(`${issuer}: ${reason}`),
    tlsFailure: (where, code) => void tls.push(`${where} ${code}`),
  };
};

describe("OIDC: several issuers, one setting", () => {
  let a: OidcIssuer;
  let b: OidcIssuer;
  beforeAll(async () => {
    [a, b] = await Promise.all([OidcIssuer.start(), OidcIssuer.start()]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  const issuers = () => [
    {
      issuer: a.issuer,
      audience: "aud-a",
      tenantClaim: "org",
      groupsClaim: "groups",
      groupScopes: { readers: ["runs:read"], operators: ["runs:read", "runs:cancel"] },
      maxTokenLifetimeSeconds: 600,
    },
    { issuer: b.issuer, audience: "aud-b" },
  ];

  it("each token is checked against the issuer its iss names, with that issuer's audience, claims, groups and lifetime", async () => {
    const observer = recording();
    const auth = oidcAuthenticator(settingsOf({ AUTH_OIDC_ISSUERS: JSON.stringify(issuers()) }), { observer });
    const now = Math.floor(Date.now() / 1000);
    // Issuer A: tenant from `org`, scopes from its groups (unknown groups and names ignored).
    const fromA = await a.token(
      { sub: "ann", aud: "aud-a", org: "acme", groups: ["readers", "operators", "guests"], scope: "openid" },
      { expiresAt: now + 300 },
    );
    expect(await auth.authenticate(bearer(fromA))).toEqual({
      tenant: "acme",
      id: "oidc:ann",
      scopes: ["runs:read", "runs:cancel"],
    });
    // Issuer B: its own defaults (tenant claim, scope claim).
    const fromB = await b.token({ sub: "bob", aud: "aud-b", tenant: "globex", scope: "runs:create" });
    expect(await auth.authenticate(bearer(fromB))).toEqual({
      tenant: "globex",
      id: "oidc:bob",
      scopes: ["runs:create"],
    });
    // A's token for B's audience: A's rules only, so refused.
    expect(
      (
        await refusal(
          auth.authenticate(bearer(await a.token({ sub: "ann", aud: "aud-b", org: "acme" }, { expiresAt: now + 300 }))),
        )
      ).message,
    ).toMatch(/"aud"/);
    // A token naming B but signed with A's key (both publish a "key-1"): B's keys decide, and they do not verify it.
    const forged = await a.token({ sub: "eve", aud: "aud-b", tenant: "globex" }, { issuer: b.issuer });
    expect((await refusal(auth.authenticate(bearer(forged)))).message).toBe(
      "invalid token: signature verification failed",
    );
    // An issuer nobody configured.
    const stranger = await a.token({ sub: "eve", aud: "aud-a", org: "acme" }, { issuer: "https://stranger.example" });
    expect((await refusal(auth.authenticate(bearer(stranger)))).message).toBe(
      'invalid token: its "iss" is not an issuer this host accepts',
    );
    // A's maximum lifetime is 10 minutes, B's the default day: an hour's token is fine from B only.
    const hourFromA = await a.token({ sub: "ann", aud: "aud-a", org: "acme" });
    // Its own code: OpenWOP 2's exp-only lane answers it as credential_lifetime_exceeded (a 401 as before).
    expect((await refusal(auth.authenticate(bearer(hourFromA)), "credential-lifetime-exceeded")).message).toBe(
      "invalid token: its lifetime is not accepted (it needs exp and iat, within the issuer's maximum)",
    );
    expect(observer.refusals).toEqual([
      `${a.issuer}: issued for 3600 s (exp − iat), more than the issuer's maximum of 600 s`,
    ]);
    expect(
      (await auth.authenticate(bearer(await b.token({ sub: "bob", aud: "aud-b", tenant: "globex" })))).tenant,
    ).toBe("globex");
  });

  it("a token without exp: 401 without the reason, the reason in the log", async () => {
    const logs: string[] = [];
    const t = await startTestApp(
      { AUTH_OIDC_ISSUERS: JSON.stringify(issuers()), AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true", LOG_LEVEL: "info" },
      undefined,
      undefined,
      { logs },
    );
    try {
      const immortal = await b.token(
        { sub: "bob", aud: "aud-b", tenant: "globex", scope: "runs:read" },
        { expiresAt: null, issuedAt: Math.floor(Date.now() / 1000) - 365 * 86_400 },
      );
      const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${immortal}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "x" } }),
      });
      expect(res.status).toBe(401);
      const answer = await res.text();
      expect(answer).toContain("its lifetime is not accepted");
      expect(answer).not.toContain('no "exp" claim');
      expect(
        logs
          .map((line) => JSON.parse(line) as { msg: string; issuer?: string })
          .filter((l) => l.msg.startsWith("token refused")),
      ).toEqual([
        expect.objectContaining({
          issuer: b.issuer,
          msg: 'token refused: no "exp" claim: a token that never expires is refused',
        }),
      ]);
      // Both issuers are on the card, any one of them suffices.
      const card = (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as {
        securitySchemes: Record<string, { openIdConnectUrl: string }>;
        security: unknown;
      };
      expect(
        Object.fromEntries(Object.entries(card.securitySchemes).map(([name, s]) => [name, s.openIdConnectUrl])),
      ).toEqual({
        oidc: `${a.issuer}/.well-known/openid-configuration`,
        "oidc-2": `${b.issuer}/.well-known/openid-configuration`,
      });
      expect(card.security).toEqual([{ oidc: [] }, { "oidc-2": [] }]);
    } finally {
      await t.close();
    }
  });
});

describe("OIDC: an issuer behind a private CA", () => {
  const certs = new TestCertificates();
  const ca = certs.ca("private-idp-ca");
  const leaf = certs.leaf("idp", ca, "/CN=idp.internal", { san: "IP:127.0.0.1,DNS:localhost" });
  let idp: OidcIssuer;
  beforeAll(async () => {
    idp = await OidcIssuer.start({ tls: { cert: leaf.cert, key: leaf.key } });
  });
  afterAll(async () => {
    await idp?.close();
    certs.remove();
  });

  it("without the CA: 401, the TLS cause logged once with what to do, and counted; with AUTH_OIDC_CA_FILE: accepted", async () => {
    const logs: string[] = [];
    const env = { AUTH_OIDC_ISSUER: idp.issuer, AUTH_OIDC_AUDIENCE: "aud", LOG_LEVEL: "info" };
    const token = await idp.token({ sub: "ann", aud: "aud", tenant: "acme", scope: "runs:read" });
    const get = (base: string) =>
      fetch(`${base}/v1/runs/${randomUUID()}`, { headers: { authorization: `Bearer ${token}` } });
    const untrusting = await startTestApp(env, undefined, undefined, { logs });
    try {
      for (let i = 0; i < 3; i++) {
        const res = await get(untrusting.baseUrl);
        expect(res.status).toBe(401);
        expect(await res.text()).toContain("the issuer's keys are unavailable");
        // Discovery is retried after 5 s; the same failure is not logged again.
        await new Promise((resolve) => setTimeout(resolve, i === 0 ? 5_100 : 0));
      }
      const tls = logs
        .map((line) => JSON.parse(line) as { msg: string; cause?: string; code?: string })
        .filter((l) => l.msg.startsWith("TLS to OIDC issuer"));
      expect(tls).toEqual([expect.objectContaining({ cause: "unknown-ca", code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" })]);
      expect(tls[0]!.msg).toContain("unable to verify its certificate: it is not signed by a CA this host trusts");
      expect(tls[0]!.msg).toContain("AUTH_OIDC_CA_FILE");
      const metrics = await (await fetch(`${untrusting.baseUrl}/metrics`)).text();
      expect(metrics).toMatch(/openwop_egress_tls_failures_total\{subject="OIDC issuer",cause="unknown-ca"[^}]*\} 2$/m);
    } finally {
      await untrusting.close();
    }
    const trusting = await startTestApp({ ...env, AUTH_OIDC_CA_FILE: ca.certFile, LOG_LEVEL: "silent" });
    try {
      expect((await get(trusting.baseUrl)).status).toBe(404);
    } finally {
      await trusting.close();
    }
  }, 20_000);
});

describe("OIDC: keys the IdP rotates in, and floods of random kids", () => {
  let idp: OidcIssuer;
  beforeAll(async () => {
    idp = await OidcIssuer.start();
  });
  afterAll(() => idp?.close());
  const settings = (cooldownMs: number) =>
    settingsOf({
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_OIDC_AUDIENCE: "aud",
      AUTH_OIDC_JWKS_COOLDOWN_MS: String(cooldownMs),
    });
  const claims = { sub: "ann", aud: "aud", tenant: "acme" };

  it("a key rotated in is refused at most for the cool-down, then accepted", async () => {
    const auth = oidcAuthenticator(settings(500));
    await auth.authenticate(bearer(await idp.token(claims)));
    const kid = `rotated-${randomUUID()}`;
    await idp.addKey(kid);
    const rotated = await idp.token(claims, { kid });
    // Within the cool-down of the fetch just made, the JWKS is not asked again.
    expect((await refusal(auth.authenticate(bearer(rotated)))).message).toBe("invalid token: signed by an unknown key");
    await new Promise((resolve) => setTimeout(resolve, 550));
    expect((await auth.authenticate(bearer(rotated))).tenant).toBe("acme");
  });

  it("a flood of tokens with random kids costs at most one JWKS fetch per cool-down", async () => {
    const cooldownMs = 300;
    const auth = oidcAuthenticator(settings(cooldownMs));
    await auth.authenticate(bearer(await idp.token(claims)));
    const rogue = `rogue-${randomUUID()}`;
    await idp.addKey(rogue, false);
    const before = idp.jwksFetches;
    const started = Date.now();
    let sent = 0;
    while (Date.now() - started < 1_500) {
      // Each token names a kid of its own, never published: every one is unknown.
      const batch = await Promise.all(
        Array.from({ length: 20 }, async () =>
          idp.token(claims, { kid: rogue }).then((t) => forgeKid(t, `random-${randomUUID()}`)),
        ),
      );
      await Promise.all(batch.map(async (token) => refusal(auth.authenticate(bearer(token)))));
      sent += batch.length;
    }
    const elapsed = Date.now() - started;
    const fetches = idp.jwksFetches - before;
    expect(sent).toBeGreaterThan(100);
    expect(fetches).toBeLessThanOrEqual(Math.ceil(elapsed / cooldownMs) + 1);
  });
});

/** The same token with another `kid` in its header (its signature no longer matters: the kid is unknown first). */
function forgeKid(token: string, kid: string): string {
  const [header, payload, signature] = token.split(".");
  const decoded = JSON.parse(Buffer.from(header!, "base64url").toString()) as Record<string, unknown>;
  return [Buffer.from(JSON.stringify({ ...decoded, kid })).toString("base64url"), payload, signature].join(".");
}
