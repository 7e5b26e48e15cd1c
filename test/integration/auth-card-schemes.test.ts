// The card tells the truth: per configuration, the 0.3 and 1.0 cards, /v1/openapi.json and the OpenWOP
// discovery `auth` block declare exactly the configured ways in (both together: oidc-tokens.test.ts).
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { knownVariables } from "../../src/config/known-variables.js";
import { OidcIssuer } from "../support/oidc-issuer.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { TestCertificates } from "../support/test-certificates.js";

type Obj = Record<string, any>;
const KEY = "card-schemes-key-0123456789abcdef";

async function surfaces(t: TestApp, bearer?: string): Promise<{ v03: Obj; v10: Obj; openapi: Obj; discovery: Obj }> {
  const json = async (path: string, headers: Record<string, string> = {}) =>
    (await (await fetch(`${t.baseUrl}${path}`, { headers })).json()) as Obj;
  return {
    v03: await json("/.well-known/agent-card.json"),
    v10: await json("/.well-known/agent-card.json", { "A2A-Version": "1.0" }),
    openapi: await json("/v1/openapi.json", bearer ? { authorization: `Bearer ${bearer}` } : {}),
    discovery: await json("/.well-known/openwop"),
  };
}

describe("the card's security schemes per configuration", () => {
  let idp: OidcIssuer;
  beforeAll(async () => {
    idp = await OidcIssuer.start();
  });
  afterAll(() => idp.close());

  it("API keys only: the apiKey bearer scheme, nothing else", async () => {
    const t = await startTestApp({
      API_KEYS: JSON.stringify([{ id: "k", tenant: "acme", scopes: ["runs:read"], key: KEY }]),
    });
    try {
      const { v03, v10, openapi, discovery } = await surfaces(t, KEY);
      expect(Object.keys(v03["securitySchemes"])).toEqual(["apiKey"]);
      expect(v03["security"]).toEqual([{ apiKey: [] }]);
      expect(Object.keys(v10["securitySchemes"])).toEqual(["apiKey"]);
      expect(v10["securityRequirements"]).toEqual([{ schemes: { apiKey: { list: [] } } }]);
      expect(openapi["components"]["securitySchemes"]).toEqual(v03["securitySchemes"]);
      expect(openapi["security"]).toEqual([{ apiKey: [] }]);
      expect(discovery["auth"]).toEqual({
        required: true,
        schemes: v03["securitySchemes"],
        security: [{ apiKey: [] }],
      });
    } finally {
      await t.close();
    }
  });

  it("OIDC only: the openIdConnect scheme with its discovery URL; a non-JWT bearer is refused", async () => {
    const t = await startTestApp({
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_OIDC_AUDIENCE: "aud",
      AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
    });
    try {
      const bearer = await idp.token({ sub: "u", aud: "aud", tenant: "acme", scope: "manifest:read" });
      const { v03, v10, openapi, discovery } = await surfaces(t, bearer);
      const scheme = {
        type: "openIdConnect",
        openIdConnectUrl: `${idp.issuer}/.well-known/openid-configuration`,
        description: expect.any(String),
      };
      expect(v03["securitySchemes"]).toEqual({ oidc: scheme });
      expect(v03["security"]).toEqual([{ oidc: [] }]);
      expect(v10["securitySchemes"]).toEqual({
        oidc: {
          openIdConnectSecurityScheme: { openIdConnectUrl: scheme.openIdConnectUrl, description: expect.any(String) },
        },
      });
      expect(v10["securityRequirements"]).toEqual([{ schemes: { oidc: { list: [] } } }]);
      expect(openapi["components"]["securitySchemes"]).toEqual({ oidc: scheme });
      expect(openapi["security"]).toEqual([{ oidc: [] }]);
      expect(discovery["auth"]["security"]).toEqual([{ oidc: [] }]);
      const apiKeyLike = await fetch(`${t.baseUrl}/v1/openapi.json`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(apiKeyLike.status).toBe(401);
      expect(apiKeyLike.headers.get("www-authenticate")).toContain('error="invalid_token"');
    } finally {
      await t.close();
    }
  });

  it("auth off: no scheme and no requirement anywhere", async () => {
    const t = await startTestApp({ AUTH: "off" });
    try {
      const { v03, v10, openapi, discovery } = await surfaces(t);
      expect(v03["securitySchemes"] ?? {}).toEqual({});
      expect(v03["security"] ?? []).toEqual([]);
      expect(v10["securitySchemes"] ?? {}).toEqual({});
      expect(v10["securityRequirements"] ?? []).toEqual([]);
      expect(openapi["components"]["securitySchemes"]).toEqual({});
      expect(openapi["security"]).toEqual([]);
      expect(discovery["auth"]).toEqual({ required: false, schemes: {}, security: [] });
    } finally {
      await t.close();
    }
  });

  it("every way in at once (API keys, OIDC, client certificates): each scheme's description is in the caller's terms, no setting names", async () => {
    const certs = new TestCertificates();
    const ca = certs.ca("card-ca");
    const server = certs.leaf("card-server", ca, "/CN=localhost", { san: "DNS:localhost,IP:127.0.0.1" });
    const dispatcher = new Agent({ connect: { ca: ca.cert } });
    const t = await startTestApp({
      API_KEYS: JSON.stringify([{ id: "k", tenant: "acme", scopes: ["runs:read"], key: KEY }]),
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_OIDC_AUDIENCE: "aud",
      AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
      TLS_CERT_FILE: server.certFile,
      TLS_KEY_FILE: server.keyFile,
      TLS_CLIENT_CA_FILE: ca.certFile,
      TLS_CLIENT_AUTH: "optional",
      TLS_CLIENT_PRINCIPALS: JSON.stringify([{ subject: "CN=agent", tenant: "acme", scopes: ["runs:read"] }]),
    });
    try {
      const json = async (path: string, headers: Record<string, string> = {}) =>
        (await (await request(`${t.baseUrl}${path}`, { dispatcher, headers })).body.json()) as Obj;
      const v03 = await json("/.well-known/agent-card.json");
      const v10 = await json("/.well-known/agent-card.json", { "A2A-Version": "1.0" });
      const openapi = await json("/v1/openapi.json", { authorization: `Bearer ${KEY}` });
      const discovery = await json("/.well-known/openwop");
      expect(Object.keys(v03["securitySchemes"]).sort()).toEqual(["apiKey", "mtls", "oidc"]);
      const descriptions = [
        ...Object.values(v03["securitySchemes"] as Obj).map((scheme: Obj) => scheme["description"]),
        // 1.0: each scheme is a oneof ({mtlsSecurityScheme: {description}}, ...).
        ...Object.values(v10["securitySchemes"] as Obj).flatMap((scheme: Obj) =>
          Object.values(scheme).map((inner: Obj) => inner["description"]),
        ),
        ...Object.values(openapi["components"]["securitySchemes"] as Obj).map((scheme: Obj) => scheme["description"]),
        ...Object.values(discovery["auth"]["schemes"] as Obj).map((scheme: Obj) => scheme["description"]),
      ];
      expect(descriptions).toHaveLength(12);
      const settings = [...(knownVariables() ?? [])];
      expect(settings).toContain("TLS_CLIENT_PRINCIPALS");
      for (const description of descriptions) {
        expect(typeof description).toBe("string");
        expect(description, description).not.toMatch(/\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/);
        for (const name of settings) expect(description, description).not.toContain(name);
      }
    } finally {
      await t.close();
      await dispatcher.close();
      certs.remove();
    }
  });
});
