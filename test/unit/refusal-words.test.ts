// What a refusal says and to whom: the credential named as it was presented, the challenge only where HTTP
// and RFC 6750 call for one, an unmapped client certificate refused as unmapped (with a notice for the
// operator, never in the answer) unless the request carries other credentials, which then decide.
import type { PeerCertificate } from "node:tls";
import { describe, expect, it } from "vitest";
import { challengeHeaders } from "../../src/auth/authenticator.js";
import { loadAuthSettings } from "../../src/auth/auth-settings.js";
import { parseClientPrincipals } from "../../src/auth/client-certificate-authenticator.js";
import { DEV_PRINCIPAL } from "../../src/auth/dev-authenticator.js";
import { hostAuthenticator } from "../../src/auth/host-authenticator.js";
import { certificateObserver } from "../../src/observed/observed-trust.js";
import { createLogger } from "../../src/observability/logger.js";
import { credentialOf, requireScope, SCOPES, type Principal } from "../../src/auth/principal.js";
import { DomainError } from "../../src/domain/errors.js";

const refusalOf = (fn: () => unknown): DomainError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
};

describe("requireScope names the credential", () => {
  const reader = (id: string): Principal => ({ tenant: "acme", id, scopes: ["runs:read"] });

  it.each([
    ["apikey:ops", 'the API key "ops" lacks the "runs:create" scope'],
    ["oidc:user-1", 'the access token of "user-1" lacks the "runs:create" scope'],
    [
      "mtls:CN=billing-agent, O=Acme",
      'the client certificate "CN=billing-agent, O=Acme" lacks the "runs:create" scope',
    ],
    ["mtls:URI:spiffe://acme/ops", 'the client certificate "URI:spiffe://acme/ops" lacks the "runs:create" scope'],
    ["partner:p1", 'the caller "partner:p1" lacks the "runs:create" scope'],
    ["__proto__:x", 'the caller "__proto__:x" lacks the "runs:create" scope'],
    ["public", 'the caller "public" lacks the "runs:create" scope'],
  ])("%s", (id, words) => {
    const err = refusalOf(() => requireScope(reader(id), "runs:create"));
    expect(err.code).toBe("permission-denied");
    expect(err.message).toBe(words);
    expect(err.details).toEqual({ requiredScope: "runs:create" });
  });

  it("the scope it holds passes; the dev principal (auth off) never lacks one", () => {
    expect(() => requireScope(reader("apikey:ops"), "runs:read")).not.toThrow();
    for (const scope of SCOPES) expect(() => requireScope(DEV_PRINCIPAL, scope)).not.toThrow();
    expect(credentialOf(DEV_PRINCIPAL)).toBe('the caller "anonymous"');
  });
});

describe("challengeHeaders", () => {
  const headers = (values: Record<string, string>) => (name: string) => values[name];
  const scope = new DomainError("permission-denied", "x", { requiredScope: "runs:create" });

  it("a bearer caller: invalid_token with its 401, insufficient_scope with its 403", () => {
    const bearer = headers({ authorization: "Bearer abc" });
    expect(challengeHeaders(bearer, new DomainError("unauthenticated", 'invalid "key"'))).toEqual({
      "www-authenticate": 'Bearer realm="openwop-a2a-host", error="invalid_token", error_description="invalid key"',
    });
    expect(challengeHeaders(bearer, scope)).toEqual({
      "www-authenticate": 'Bearer realm="openwop-a2a-host", error="insufficient_scope", scope="runs:create"',
    });
  });

  it("no bearer: a bare challenge with a 401, none with a 403; none for other errors", () => {
    const none = headers({ "x-api-key": "k" });
    expect(challengeHeaders(none, new DomainError("unauthenticated", "missing credentials"))).toEqual({
      "www-authenticate": 'Bearer realm="openwop-a2a-host"',
    });
    expect(challengeHeaders(none, scope)).toEqual({});
    expect(
      challengeHeaders(
        headers({ authorization: "Bearer abc" }),
        new DomainError("permission-denied", "not your tenant"),
      ),
    ).toEqual({});
    expect(challengeHeaders(headers({ authorization: "Bearer abc" }), new DomainError("task-not-found", "x"))).toEqual(
      {},
    );
    expect(challengeHeaders(headers({ authorization: "Bearer abc" }), new Error("boom"))).toEqual({});
  });
});

describe("an unmapped client certificate", () => {
  const KEY = "unmapped-key-0123456789abcdef";
  const settings = loadAuthSettings(
    { API_KEYS: JSON.stringify([{ id: "k", tenant: "acme", scopes: ["runs:read"], key: KEY }]) },
    false,
  );
  if (Array.isArray(settings)) throw new Error(settings.join("; "));
  const principals = parseClientPrincipals(
    JSON.stringify([{ subject: "CN=billing-agent,O=Acme", tenant: "acme", scopes: ["runs:read"] }]),
  );
  const certificate = (subject: Record<string, string>, subjectaltname?: string) =>
    ({ raw: Buffer.from("der"), subject, ...(subjectaltname ? { subjectaltname } : {}) }) as unknown as PeerCertificate;
  const stranger = certificate({ CN: "stranger", O: "Acme" }, "DNS:stranger.example, URI:spiffe://acme/stranger");

  it("alone: refused as unmapped; the operator's log line names its subject and SANs and the entry that maps them", () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger("warn", {
      write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>),
    });
    const host = hostAuthenticator(settings, principals, { certificates: certificateObserver(logger) });
    const err = refusalOf(() => host.authenticate({ headers: () => undefined, peerCertificate: stranger }));
    expect([err.code, err.message]).toEqual(["unauthenticated", "the client certificate is not mapped to a principal"]);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        event: "auth.unmapped_certificate",
        subject: "CN=stranger,O=Acme",
        subjectAltNames: ["DNS:stranger.example", "URI:spiffe://acme/stranger"],
        msg: 'refused a verified client certificate that is not mapped to a principal: to let it in, add {"subject":"CN=stranger,O=Acme","tenant":"<tenant>","scopes":["<scope>"]} (or {"san": …} with one of DNS:stranger.example, URI:spiffe://acme/stranger) to TLS_CLIENT_PRINCIPALS',
      }),
    ]);
  });

  it("with an API key (bearer or X-API-Key): the key decides, nothing is reported", () => {
    const notices: unknown[] = [];
    const host = hostAuthenticator(settings, principals, {
      certificates: { unmapped: (...args) => void notices.push(args) },
    });
    for (const header of [{ authorization: `Bearer ${KEY}` }, { "x-api-key": KEY }] as Array<Record<string, string>>) {
      expect(host.authenticate({ headers: (name) => header[name], peerCertificate: stranger })).toEqual({
        tenant: "acme",
        id: "apikey:k",
        scopes: ["runs:read"],
      });
    }
    expect(notices).toEqual([]);
  });

  it("a mapped certificate beside an API key: the key decides (openwop-auth-mtls), and must be of its tenant", () => {
    const OTHER = "globex-key-0123456789abcdef";
    const both = loadAuthSettings(
      {
        API_KEYS: JSON.stringify([
          { id: "k", tenant: "acme", scopes: ["runs:read", "runs:create"], key: KEY },
          { id: "g", tenant: "globex", scopes: ["runs:read"], key: OTHER },
        ]),
      },
      false,
    );
    if (Array.isArray(both)) throw new Error(both.join("; "));
    const host = hostAuthenticator(both, principals);
    const billing = certificate({ O: "Acme", CN: "billing-agent" });
    const withKey = (key: string) => ({
      headers: (name: string) => (name === "authorization" ? `Bearer ${key}` : undefined),
      peerCertificate: billing,
    });
    expect(host.authenticate(withKey(KEY))).toEqual({
      tenant: "acme",
      id: "apikey:k",
      scopes: ["runs:read", "runs:create"],
    });
    const err = refusalOf(() => host.authenticate(withKey(OTHER)));
    expect([err.code, err.message]).toEqual([
      "unauthenticated",
      "the client certificate and the bearer credential belong to different tenants: present credentials of one",
    ]);
    // Alone, the certificate is its entry's principal.
    expect(host.authenticate({ headers: () => undefined, peerCertificate: billing })).toEqual({
      tenant: "acme",
      id: "mtls:CN=billing-agent,O=Acme",
      scopes: ["runs:read"],
    });
  });
});
