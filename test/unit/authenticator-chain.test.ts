// The authentication port's chain: the first authenticator that recognises a credential decides (a refusal is
// final), none recognising it is `unauthenticated`; API keys answer without a promise; descriptions merge.
import { describe, expect, it } from "vitest";
import { apiKeyAuthenticator, parseApiKeys } from "../../src/auth/api-key-authenticator.js";
import { bearerOf, chain, isJwtShaped, type Authenticator } from "../../src/auth/authenticator.js";
import { devAuthenticator } from "../../src/auth/dev-authenticator.js";
import { DomainError } from "../../src/domain/errors.js";

const KEY = "chain-key-0123456789abcdef";
const keys = apiKeyAuthenticator(parseApiKeys(JSON.stringify([{ id: "k", tenant: "acme", scopes: ["runs:read"], key: KEY }])));
/** A token authenticator of the port's shape: takes JWT-shaped bearers, accepts only "a.b.c". */
const tokens: Authenticator = {
  recognises: ({ headers }) => isJwtShaped(bearerOf(headers) ?? ""),
  authenticate: async ({ headers }) => {
    if (bearerOf(headers) !== "a.b.c") throw new DomainError("unauthenticated", "invalid token: test");
    return { tenant: "globex", id: "oidc:t", scopes: [] };
  },
  describe: () => ({ enabled: true, schemes: { oidc: { type: "openIdConnect" } }, requirements: [{ oidc: [] }], tenants: [], allTenantsHolders: [], summary: "tokens" }),
};
const bearer = (value?: string) => ({ headers: (name: string) => (name === "authorization" && value !== undefined ? `Bearer ${value}` : undefined) });

describe("chain(...authenticators)", () => {
  const both = chain(tokens, keys);

  it("a JWT-shaped bearer goes to tokens, anything else to API keys, answered without a promise", async () => {
    expect(await both.authenticate(bearer("a.b.c"))).toEqual({ tenant: "globex", id: "oidc:t", scopes: [] });
    const key = both.authenticate(bearer(KEY));
    expect(key).not.toBeInstanceOf(Promise);
    expect(key).toEqual({ tenant: "acme", id: "apikey:k", scopes: ["runs:read"] });
  });

  it("a refusal is final: a bad token is not tried as an API key", async () => {
    await expect(Promise.resolve().then(() => both.authenticate(bearer("x.y.z")))).rejects.toThrow("invalid token: test");
    expect(() => both.authenticate(bearer("not-a-key-0123456789"))).toThrow("invalid API key");
    expect(() => both.authenticate(bearer())).toThrow("missing credentials");
    // Even when a later authenticator would take anything (dev), the first that recognises decides.
    await expect(Promise.resolve().then(() => chain(tokens, devAuthenticator).authenticate(bearer("x.y.z")))).rejects.toThrow("invalid token: test");
    expect(chain(tokens, devAuthenticator).authenticate(bearer(KEY))).toEqual(expect.objectContaining({ id: "anonymous" }));
  });

  it("nobody recognising the credential is unauthenticated", () => {
    const err = (() => {
      try {
        chain(tokens, { ...keys, recognises: () => false }).authenticate(bearer(KEY));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe("unauthenticated");
  });

  it("describes every way in: schemes, requirements as alternatives, tenants, the start-up words", () => {
    expect(both.describe()).toEqual({
      enabled: true,
      schemes: { oidc: { type: "openIdConnect" }, apiKey: expect.objectContaining({ type: "http", scheme: "bearer" }) },
      requirements: [{ oidc: [] }, { apiKey: [] }],
      tenants: ["acme"],
      allTenantsHolders: [],
      summary: "tokens + API keys (1)",
    });
  });
});
