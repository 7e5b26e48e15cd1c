// OpenWOP v1's auth profiles on a real host: the v1 discovery document claims openwop-auth-oidc-user-bearer,
// openwop-auth-oauth2-client-credentials and openwop-auth-mtls with blocks describing exactly what is configured,
// and the checks of the three conformance scenarios (openwop/openwop conformance/src/scenarios/auth-*.test.ts:
// POST /v1/runs with a wrong iss, wrong aud, expired token or unknown kid → 401; a trusted token → 201 or 403;
// group-claim with empty groups → 403; a client certificate with a bearer → 201; no certificate on a port that
// requires one → a TLS failure) hold. Two real OpenID issuers on loopback (a user IdP whose tokens name no tenant,
// and a machine IdP whose client-credentials tokens carry no `sub`), certificates made with openssl, HTTPS with
// client certificates required, and the RFC 9728 metadata the challenges name.
import { request, Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OidcIssuer } from "../support/oidc-issuer.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { TestCertificates, type Issued } from "../support/test-certificates.js";

const AUDIENCE = "https://a2a.example/openwop";
const certs = new TestCertificates();
const serverCa = certs.ca("server-ca");
const server = certs.leaf("server", serverCa, "/CN=localhost", { san: "DNS:localhost,IP:127.0.0.1" });
const clientCa = certs.ca("client-ca");
// Mapped to tenant acme by its CN; the other is verified but mapped to nothing.
const billing = certs.leaf("billing", clientCa, "/CN=billing-agent", { client: true });
const stranger = certs.leaf("stranger", clientCa, "/CN=stranger", { client: true });

const agents: Agent[] = [];
function agentFor(identity?: Issued): Agent {
  const agent = new Agent({
    connect: { ca: serverCa.cert, ...(identity ? { cert: identity.cert, key: identity.key } : {}) },
  });
  agents.push(agent);
  return agent;
}

interface Answer {
  status: number;
  challenge: string | undefined;
  body: any;
}

async function call(
  t: TestApp,
  method: "GET" | "POST",
  path: string,
  options: { token?: string; identity?: Issued | null; body?: unknown } = {},
): Promise<Answer> {
  const res = await request(`${t.baseUrl}${path}`, {
    method,
    dispatcher: agentFor(options.identity === null ? undefined : (options.identity ?? billing)),
    headers: {
      ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await res.body.text();
  return {
    status: res.statusCode,
    challenge: res.headers["www-authenticate"] as string | undefined,
    body: text ? JSON.parse(text) : undefined,
  };
}

const createRun = (t: TestApp, token: string, identity?: Issued) =>
  call(t, "POST", "/v1/runs", { token, body: { workflowId: "conformance-noop" }, ...(identity ? { identity } : {}) });

describe("OpenWOP v1 auth profiles: OIDC issuers and client certificates", () => {
  let users: OidcIssuer;
  let machines: OidcIssuer;
  let stray: OidcIssuer;
  let t: TestApp;
  let metadataUrl: string;

  beforeAll(async () => {
    [users, machines, stray] = await Promise.all([OidcIssuer.start(), OidcIssuer.start(), OidcIssuer.start()]);
    await users.addKey("never-published", false);
    t = await startTestApp({
      AUTH_OIDC_ISSUERS: JSON.stringify([
        // The user IdP names no tenant: one tenant per issuer; groups grant scopes.
        {
          issuer: users.issuer,
          audience: AUDIENCE,
          tenant: "acme",
          groupsClaim: "groups",
          groupScopes: { "openwop:operators": ["runs:create", "runs:read"] },
        },
        // The machine IdP: tenant in `tid`, app roles in `roles` (as Entra ID's client-credentials tokens carry).
        {
          issuer: machines.issuer,
          audience: AUDIENCE,
          tenantClaim: "tid",
          groupsClaim: "roles",
          groupScopes: { "runs.writer": ["runs:create", "runs:read"] },
        },
      ]),
      AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
      TLS_CERT_FILE: server.certFile,
      TLS_KEY_FILE: server.keyFile,
      TLS_CLIENT_CA_FILE: clientCa.certFile,
      TLS_CLIENT_AUTH: "required",
      TLS_CLIENT_PRINCIPALS: JSON.stringify([{ subject: "CN=billing-agent", tenant: "acme", scopes: ["runs:read"] }]),
    });
    metadataUrl = `${t.baseUrl}/.well-known/oauth-protected-resource`;
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([users, machines, stray].map((i) => i?.close()));
    await Promise.all(agents.map((a) => a.close()));
    certs.remove();
  });

  it("the v1 document claims the three profiles, with every issuer, the audience, the mappings and mtls.required", async () => {
    const doc = await call(t, "GET", "/.well-known/openwop");
    expect(doc.status).toBe(200);
    const { auth } = doc.body;
    expect(auth.profiles).toEqual([
      "openwop-auth-oidc-user-bearer",
      "openwop-auth-oauth2-client-credentials",
      "openwop-auth-mtls",
    ]);
    expect(auth.oidc).toEqual({
      supported: true,
      issuers: [users.issuer, machines.issuer],
      audience: AUDIENCE,
      supportedScopeMapping: "group-claim",
    });
    // Two issuers: the profile's single `issuer` is left out rather than naming one of them.
    expect(auth.oauth2).toMatchObject({ supported: true, audience: AUDIENCE });
    expect(auth.oauth2.issuer).toBeUndefined();
    expect(auth.oauth2.supportedAlgorithms).toContain("ES256");
    expect(auth.oauth2.supportedAlgorithms).not.toContain("HS256");
    expect(auth.mtls).toEqual({ supported: true, required: true, subjectMapping: "cn" });
    // The v2 representation has none of it: its lanes replace the profiles.
    const v2 = await request(`${t.baseUrl}/.well-known/openwop`, {
      dispatcher: agentFor(billing),
      headers: { "openwop-version": "2" },
    });
    const v2doc = (await v2.body.json()) as any;
    expect(v2doc.auth.profiles).toBeUndefined();
    expect(v2doc.auth.lanes.map((l: any) => l.issuers[0])).toEqual([users.issuer, machines.issuer]);
  });

  it("wrong iss, wrong aud, expired and unknown kid are 401, each challenge naming the resource metadata", async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: "ann", aud: AUDIENCE, groups: ["openwop:operators"] };
    const bad = {
      "wrong iss": await stray.token(claims),
      "wrong aud": await users.token({ ...claims, aud: "https://elsewhere.example" }),
      expired: await users.token(claims, { issuedAt: now - 3700, expiresAt: now - 3600 }),
      "unknown kid": await users.token(claims, { kid: "never-published" }),
    };
    for (const [name, token] of Object.entries(bad)) {
      const res = await createRun(t, token);
      expect(res.status, name).toBe(401);
      expect(res.body.error, name).toBe("unauthenticated");
      expect(res.challenge, name).toMatch(/^Bearer realm="openwop-a2a-host", error="invalid_token", /);
      expect(res.challenge, name).toContain(`resource_metadata="${metadataUrl}"`);
    }
    // No credential: the challenge names the metadata and no error.
    const none = await call(t, "POST", "/v1/runs", { body: { workflowId: "conformance-noop" }, identity: stranger });
    expect(none.status).toBe(401);
    expect(none.challenge).toBe(`Bearer realm="openwop-a2a-host", resource_metadata="${metadataUrl}"`);
  });

  it("a user's token is 201 with its group's scopes; with empty groups, 403 insufficient_scope naming runs:create", async () => {
    const ok = await createRun(t, await users.token({ sub: "ann", aud: AUDIENCE, groups: ["openwop:operators"] }));
    expect(ok.status).toBe(201);
    const empty = await createRun(t, await users.token({ sub: "ann", aud: AUDIENCE, groups: [] }));
    expect(empty.status).toBe(403);
    expect(empty.body.error).toBe("forbidden");
    expect(empty.challenge).toBe(
      `Bearer realm="openwop-a2a-host", error="insufficient_scope", scope="runs:create", resource_metadata="${metadataUrl}"`,
    );
  });

  it("a client-credentials token without sub is its client: 201, and the run is owned by oidc:client:<client_id>", async () => {
    const machine = { aud: AUDIENCE, tid: "acme", client_id: "billing-bot", roles: ["runs.writer"] };
    const token = await machines.token(machine);
    const created = await createRun(t, token);
    expect(created.status).toBe(201);
    const run = await call(t, "GET", `/v1/runs/${created.body.runId}`, { token });
    expect(run.body.owner).toMatchObject({ tenant: "acme", principal: "oidc:client:billing-bot" });
    // `azp` names the client when `client_id` is absent; a token naming no one at all is refused.
    const azp = await createRun(t, await machines.token({ aud: AUDIENCE, tid: "acme", azp: "x", roles: [] }));
    expect(azp.status).toBe(403);
    const nobody = await createRun(t, await machines.token({ aud: AUDIENCE, tid: "acme", roles: ["runs.writer"] }));
    expect(nobody.status).toBe(401);
    expect(nobody.body.message).toContain('no "sub"');
  });

  it("a certificate with a bearer: the bearer decides, within the mapped certificate's tenant", async () => {
    // The mapped certificate alone holds only runs:read; the user token beside it is the caller.
    const token = await users.token({ sub: "ann", aud: AUDIENCE, groups: ["openwop:operators"] });
    expect((await createRun(t, token, billing)).status).toBe(201);
    // Alone, the certificate is its own caller: it may read, not create.
    const alone = await call(t, "POST", "/v1/runs", { body: { workflowId: "conformance-noop" } });
    expect(alone.status).toBe(403);
    expect(alone.challenge).toBeUndefined();
    // An unmapped certificate only authenticates the connection.
    expect((await createRun(t, token, stranger)).status).toBe(201);
    // A bearer of another tenant over the mapped certificate's connection is refused.
    const globex = await machines.token({ aud: AUDIENCE, tid: "globex", client_id: "g", roles: ["runs.writer"] });
    const mixed = await createRun(t, globex, billing);
    expect(mixed.status).toBe(401);
    expect(mixed.body.message).toContain("different tenants");
    expect((await createRun(t, globex, stranger)).status).toBe(201);
  });

  it("without a client certificate the handshake fails (mtls.required)", async () => {
    const token = await users.token({ sub: "ann", aud: AUDIENCE, groups: ["openwop:operators"] });
    await expect(
      call(t, "POST", "/v1/runs", { token, body: { workflowId: "conformance-noop" }, identity: null }),
    ).rejects.toThrow();
  });

  it("serves the RFC 9728 metadata unauthenticated: the resource, exactly the issuers, the enforced scopes", async () => {
    const res = await request(metadataUrl, { dispatcher: agentFor(stranger) });
    expect(res.statusCode).toBe(200);
    const doc = (await res.body.json()) as any;
    expect(doc).toMatchObject({
      resource: t.baseUrl,
      authorization_servers: [users.issuer, machines.issuer],
      bearer_methods_supported: ["header"],
    });
    expect(doc.scopes_supported).toEqual(expect.arrayContaining(["runs:create", "runs:read", "approvals:respond"]));
    expect(doc.dpop_bound_access_tokens_required).toBeUndefined();
  });
});

describe("OpenWOP v1 auth profiles: API keys only", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      API_KEYS: JSON.stringify([{ id: "k", tenant: "acme", scopes: ["runs:read"], key: "profiles-key-0123456789" }]),
    });
  });
  afterAll(() => t?.close());

  it("claims no profile, serves no metadata, and its challenges name none", async () => {
    const doc = (await (await fetch(`${t.baseUrl}/.well-known/openwop`)).json()) as any;
    expect(doc.auth.profiles).toBeUndefined();
    expect(doc.auth.oidc).toBeUndefined();
    expect(doc.auth.mtls).toBeUndefined();
    expect((await fetch(`${t.baseUrl}/.well-known/oauth-protected-resource`)).status).toBe(404);
    const refused = await fetch(`${t.baseUrl}/v1/runs/x`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="openwop-a2a-host"');
  });
});
