// The authentication port's chain: the first authenticator that recognises a credential decides (a refusal is
// final), none recognising it is `unauthenticated`; API keys answer without a promise; descriptions merge.
import { describe, expect, it } from "vitest";
import { apiKeyAuthenticator, parseApiKeys } from "../../src/auth/api-key-authenticator.js";
import { bearerOf, chain, isJwtShaped, type Authenticator } from "../../src/auth/authenticator.js";
import { devAuthenticator } from "../../src/auth/dev-authenticator.js";
import { loadAuthSettings } from "../../src/auth/auth-settings.js";
import { hostAuthenticator } from "../../src/auth/host-authenticator.js";
import { buildAgentCard } from "../../src/a2a/agent-card.js";
import { ConsoleAccess } from "../../src/console/console-access.js";
import type { WorkflowCatalog } from "../../src/engine/workflow-catalog.js";
import { openApiDocument } from "../../src/transport/openapi/openapi-document.js";
import { hostInterfaces } from "../../src/transport/interface-urls.js";
import { DomainError } from "../../src/domain/errors.js";

const KEY = "chain-key-0123456789abcdef";
const keys = apiKeyAuthenticator(
  parseApiKeys(JSON.stringify([{ id: "k", tenant: "acme", scopes: ["runs:read"], key: KEY }])),
);
/** A token authenticator of the port's shape: takes JWT-shaped bearers, accepts only "a.b.c". */
const tokens: Authenticator = {
  recognises: ({ headers }) => isJwtShaped(bearerOf(headers) ?? ""),
  authenticate: async ({ headers }) => {
    if (bearerOf(headers) !== "a.b.c") throw new DomainError("unauthenticated", "invalid token: test");
    return { tenant: "globex", id: "oidc:t", scopes: [] };
  },
  describe: () => ({
    enabled: true,
    schemes: { oidc: { type: "openIdConnect" } },
    requirements: [{ oidc: [] }],
    tenants: [],
    allTenantsHolders: [],
    summary: "tokens",
  }),
};
const bearer = (value?: string) => ({
  headers: (name: string) => (name === "authorization" && value !== undefined ? `Bearer ${value}` : undefined),
});

describe("chain(...authenticators)", () => {
  const both = chain(tokens, keys);

  it("a JWT-shaped bearer goes to tokens, anything else to API keys, answered without a promise", async () => {
    expect(await both.authenticate(bearer("a.b.c"))).toEqual({ tenant: "globex", id: "oidc:t", scopes: [] });
    const key = both.authenticate(bearer(KEY));
    expect(key).not.toBeInstanceOf(Promise);
    expect(key).toEqual({ tenant: "acme", id: "apikey:k", scopes: ["runs:read"] });
  });

  it("a refusal is final: a bad token is not tried as an API key", async () => {
    await expect(Promise.resolve().then(() => both.authenticate(bearer("x.y.z")))).rejects.toThrow(
      "invalid token: test",
    );
    expect(() => both.authenticate(bearer("not-a-key-0123456789"))).toThrow("invalid API key");
    expect(() => both.authenticate(bearer())).toThrow("missing credentials");
    // Even when a later authenticator would take anything (dev), the first that recognises decides.
    await expect(
      Promise.resolve().then(() => chain(tokens, devAuthenticator).authenticate(bearer("x.y.z"))),
    ).rejects.toThrow("invalid token: test");
    expect(chain(tokens, devAuthenticator).authenticate(bearer(KEY))).toEqual(
      expect.objectContaining({ id: "anonymous" }),
    );
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

// docs/architecture.md "How to add an authenticator", followed with a throwaway one: a partner key in its own
// header. The port alone, then one more part in host-authenticator.ts's chain, before the API keys (they take any
// other request, so a part after them would never be asked; here: chained before the host's),
// and the card, the OpenAPI document and the console's tenant list take it from describe(), with no change.
describe("an authenticator added by the recipe", () => {
  const partner: Authenticator = {
    recognises: ({ headers }) => headers("x-partner-key") !== undefined,
    authenticate({ headers }) {
      if (headers("x-partner-key") !== "partner-secret-0123456789")
        throw new DomainError("unauthenticated", "invalid partner key");
      return { tenant: "partners", id: "partner:p1", scopes: ["runs:read"] };
    },
    describe: () => ({
      enabled: true,
      schemes: { partnerKey: { type: "apiKey", in: "header", name: "X-Partner-Key" } },
      requirements: [{ partnerKey: [] }],
      tenants: ["partners"],
      allTenantsHolders: [],
      summary: "partner keys (1)",
    }),
  };
  const settings = loadAuthSettings(
    { API_KEYS: JSON.stringify([{ id: "k", tenant: "acme", scopes: ["runs:read"], key: KEY }]) },
    false,
  );
  if (Array.isArray(settings)) throw new Error(settings.join("; "));
  const host = chain(partner, hostAuthenticator(settings));
  const header = (name: string, value: string) => ({ headers: (n: string) => (n === name ? value : undefined) });

  it("decides its own requests (a refusal is final), leaves the others to the host's authenticators", () => {
    expect(host.authenticate(header("x-partner-key", "partner-secret-0123456789"))).toEqual({
      tenant: "partners",
      id: "partner:p1",
      scopes: ["runs:read"],
    });
    expect(() => host.authenticate(header("x-partner-key", "wrong"))).toThrow("invalid partner key");
    expect(host.authenticate(bearer(KEY))).toEqual({ tenant: "acme", id: "apikey:k", scopes: ["runs:read"] });
    expect(() => host.authenticate(bearer())).toThrow("missing credentials");
  });

  it("the card, the OpenAPI document and the console read it from describe()", () => {
    const auth = host.describe();
    const card = buildAgentCard({ list: () => [] } as unknown as WorkflowCatalog, {
      name: "a",
      description: "b",
      version: "1",
      interfaces: hostInterfaces("https://agent.example"),
      streaming: true,
      pushNotifications: false,
      security: { schemes: auth.schemes, requirements: auth.requirements },
    });
    expect(card.securitySchemes).toEqual({
      partnerKey: { type: "apiKey", in: "header", name: "X-Partner-Key" },
      apiKey: expect.objectContaining({ type: "http", scheme: "bearer" }),
    });
    expect(card.security).toEqual([{ partnerKey: [] }, { apiKey: [] }]);
    const openApi = openApiDocument({ publicUrl: "https://agent.example", version: "1", auth }) as {
      components: { securitySchemes: object };
      security: unknown;
    };
    expect(openApi.components.securitySchemes).toHaveProperty("partnerKey");
    expect(openApi.security).toEqual([{ partnerKey: [] }, { apiKey: [] }]);
    expect(
      ConsoleAccess.fromAuth(auth).tenantsFor({ tenant: "acme", id: "op", scopes: ["console:all-tenants"] }),
    ).toEqual(["partners", "acme"]);
    expect(auth.summary).toBe("partner keys (1) + API keys (1)");
  });
});

describe("a request with no credential", () => {
  it("is told what this host takes, as configured: no API key where none is configured", () => {
    const oidcOnly = loadAuthSettings({ AUTH_OIDC_ISSUER: "https://idp.example", AUTH_OIDC_AUDIENCE: "host" }, false);
    if (Array.isArray(oidcOnly)) throw new Error(oidcOnly.join("; "));
    const certificates = [{ subject: "CN=agent", tenant: "acme", scopes: ["runs:read" as const] }];
    const none = { headers: () => undefined };
    expect(() => hostAuthenticator(oidcOnly, certificates).authenticate(none)).toThrow(
      "missing credentials: this agent takes a client certificate or an access token (Authorization: Bearer <token>)",
    );
    const keys = loadAuthSettings(
      {
        API_KEYS: JSON.stringify([
          { id: "k", tenant: "acme", scopes: ["runs:read"], key: "chain-key-0123456789abcdef" },
        ]),
        AUTH_OIDC_ISSUER: "https://idp.example",
        AUTH_OIDC_AUDIENCE: "host",
      },
      false,
    );
    if (Array.isArray(keys)) throw new Error(keys.join("; "));
    // With API keys configured, a request without a bearer is the API-key authenticator's to refuse.
    expect(() => hostAuthenticator(keys).authenticate(none)).toThrow(
      "missing credentials: send Authorization: Bearer <API key>",
    );
  });
});
