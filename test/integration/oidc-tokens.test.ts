// OIDC bearer tokens in, next to API keys, on every binding: a real OpenID issuer on loopback (discovery,
// JWKS, ES256 keys made with jose), the real app, and real clients (fetch, @a2a-js/sdk, @grpc/grpc-js).
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { base64url, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { A2AService as A2AServiceV10 } from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { OidcIssuer } from "../support/oidc-issuer.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const AUDIENCE = "openwop-a2a-host";
const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];
const API_KEY = "oidc-side-key-0123456789abcdef";
const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));

type Obj = Record<string, any>;

describe("OIDC bearer tokens on every binding", () => {
  let idp: OidcIssuer;
  let t: TestApp;
  let grpcClient: grpc.Client & Record<string, any>;
  beforeAll(async () => {
    idp = await OidcIssuer.start();
    t = await startTestApp({
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_OIDC_AUDIENCE: AUDIENCE,
      AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
      API_KEYS: JSON.stringify([{ id: "side", tenant: "acme", scopes: ALL, key: API_KEY }]),
    });
    const definition = protoLoader.loadSync("a2a/v1/a2a.proto", {
      includeDirs: [protoDir],
      keepCase: false,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const pkg = grpc.loadPackageDefinition(definition) as any;
    grpcClient = new pkg.a2a.v1.A2AService(`127.0.0.1:${t.port}`, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    grpcClient?.close();
    await t?.close();
    await idp?.close();
  });

  const token = (claims: Obj = {}, options: Parameters<OidcIssuer["token"]>[1] = {}) =>
    idp.token({ sub: "user-1", aud: AUDIENCE, tenant: "acme", scope: `openid ${ALL.join(" ")}`, ...claims }, options);
  const rpc = async (method: string, params: unknown, bearer?: string) => {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return {
      status: res.status,
      headers: res.headers,
      body: (await res.json()) as { result?: any; error?: { code: number; message: string } },
    };
  };
  const sendParams = () => ({
    message: {
      kind: "message",
      messageId: randomUUID(),
      role: "user",
      parts: [{ kind: "text", text: "hi" }],
      metadata: { skillId: "echo" },
    },
  });
  const grpcGetTask = (name: string, bearer: string): Promise<grpc.ServiceError | Obj> => {
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${bearer}`);
    return new Promise((resolve) =>
      grpcClient["getTask"]({ name }, metadata, (err: grpc.ServiceError | null, res: Obj) => resolve(err ?? res)),
    );
  };

  it("a token is a principal like an API key: JSON-RPC, HTTP+JSON, OpenWOP REST, gRPC, the SDK; tenants stay apart", async () => {
    const acme = await token();
    const created = await rpc("message/send", sendParams(), acme);
    expect(created.status).toBe(200);
    const id = created.body.result.id as string;
    // The same tenant's API key reads it: tokens and keys side by side, one Principal shape.
    expect((await rpc("tasks/get", { id }, API_KEY)).body.result.id).toBe(id);
    const rest = await fetch(`${t.baseUrl}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${acme}` } });
    expect(rest.status).toBe(200);
    const run = await fetch(`${t.baseUrl}/v1/runs/${id}`, { headers: { authorization: `Bearer ${acme}` } });
    expect(run.status).toBe(200);
    const viaGrpc = (await grpcGetTask(`tasks/${id}`, acme)) as Obj;
    expect(viaGrpc["id"]).toBe(id);
    const sdk = await new ClientFactory({
      transports: [new JsonRpcTransportFactory()],
      preferredTransports: ["JSONRPC"],
      clientConfig: {
        interceptors: [
          {
            async before(args: any) {
              args.options = {
                ...args.options,
                serviceParameters: { ...args.options?.serviceParameters, authorization: `Bearer ${acme}` },
              };
            },
            async after() {},
          },
        ],
      },
    }).createFromUrl(t.baseUrl);
    expect((await sdk.getTask({ tenant: "", id })).id).toBe(id);
    // Another tenant's token does not see it.
    const globex = await token({ tenant: "globex", sub: "user-2" });
    expect((await rpc("tasks/get", { id }, globex)).body.error?.code).toBe(-32001);
    expect(((await grpcGetTask(`tasks/${id}`, globex)) as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
  });

  it("Connect and gRPC-Web (A2A 1.0 service) take tokens; the console too", async () => {
    const acme = await token({ scope: `${ALL.join(" ")} console:operate` });
    const id = (await rpc("message/send", sendParams(), acme)).body.result.id as string;
    const withToken = (bearer: string) => [
      (next: any) => (req: any) => (req.header.set("authorization", `Bearer ${bearer}`), next(req)),
    ];
    for (const transport of [createConnectTransport, createGrpcWebTransport]) {
      const client = createClient(
        A2AServiceV10,
        transport({ baseUrl: t.baseUrl, httpVersion: "1.1", interceptors: withToken(acme) }),
      );
      expect((await client.getTask({ id })).id).toBe(id);
      const refused = createClient(
        A2AServiceV10,
        transport({
          baseUrl: t.baseUrl,
          httpVersion: "1.1",
          interceptors: withToken(await token({}, { expiresAt: 1 })),
        }),
      );
      const err = await refused.getTask({ id }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.Unauthenticated);
    }
    const page = await fetch(`${t.baseUrl}/console/api/tasks`, { headers: { authorization: `Bearer ${acme}` } });
    expect(page.status).toBe(200);
    expect(JSON.stringify(await page.json())).toContain(id);
  });

  it("a token without the scope: 403 with RFC 6750 insufficient_scope; scp arrays count", async () => {
    const reader = await token({ scope: "runs:read" });
    const res = await fetch(`${t.baseUrl}/v1/message:send`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${reader}` },
      body: JSON.stringify({
        message: {
          messageId: randomUUID(),
          role: "ROLE_USER",
          content: [{ text: "hi" }],
          metadata: { skillId: "echo" },
        },
      }),
    });
    expect(res.status).toBe(403);
    // An OIDC host names its RFC 9728 protected-resource metadata in every challenge (identity.md §2.5).
    expect(res.headers.get("www-authenticate")).toBe(
      `Bearer realm="openwop-a2a-host", error="insufficient_scope", scope="runs:create", resource_metadata="${t.baseUrl}/.well-known/oauth-protected-resource"`,
    );
    // `scp` as an array (Entra ID) is read as well.
    const scp = await token({ scope: undefined, scp: ["runs:read"] });
    const created = await rpc("message/send", sendParams(), await token());
    expect((await rpc("tasks/get", { id: created.body.result.id }, scp)).body.result.id).toBe(created.body.result.id);
    expect((await rpc("tasks/cancel", { id: created.body.result.id }, scp)).body.error?.message).toContain(
      '"runs:cancel"',
    );
  });

  /** Every bad token of issue 28's list: each refused with 401 / UNAUTHENTICATED, never 500. */
  const badTokens: Array<[string, () => Promise<string>, RegExp]> = [
    ["expired", () => token({}, { expiresAt: Math.floor(Date.now() / 1000) - 3600 }), /expired/],
    ["not yet valid", () => token({}, { notBefore: Math.floor(Date.now() / 1000) + 3600 }), /"nbf"/],
    ["wrong audience", () => token({ aud: "someone-else" }), /"aud"/],
    ["wrong issuer", () => token({}, { issuer: "https://evil.example" }), /"iss"/],
    ["unknown kid", () => rogueToken(), /unknown key/],
    [
      "alg none",
      async () =>
        `${base64url.encode(JSON.stringify({ alg: "none", typ: "JWT" }))}.${base64url.encode(JSON.stringify({ sub: "x", aud: AUDIENCE, iss: idp.issuer, tenant: "acme", exp: Math.floor(Date.now() / 1000) + 600 }))}.`,
      /algorithm not allowed|malformed/,
    ],
    ["HMAC with the public key", () => hmacWithPublicKey(), /algorithm not allowed/],
    ["malformed", async () => "abc.def.ghi", /malformed/],
    ["oversized", async () => token({ padding: "x".repeat(10_000) }), /longer than/],
    ["no tenant claim", () => token({ tenant: undefined }), /tenant/],
    // Tokens must expire (RFC 9068): no exp, no iat, or a life past the issuer's maximum (a day by default).
    [
      "no exp, issued a year ago",
      () => token({}, { expiresAt: null, issuedAt: Math.floor(Date.now() / 1000) - 365 * 86_400 }),
      /lifetime is not accepted/,
    ],
    ["no iat", () => token({}, { issuedAt: null }), /lifetime is not accepted/],
    [
      "issued for two days",
      () => token({}, { expiresAt: Math.floor(Date.now() / 1000) + 2 * 86_400 }),
      /lifetime is not accepted/,
    ],
    [
      "iat backdated a year, exp in an hour",
      () => token({}, { issuedAt: Math.floor(Date.now() / 1000) - 365 * 86_400 }),
      /lifetime is not accepted/,
    ],
  ];

  async function rogueToken(): Promise<string> {
    const kid = `rogue-${randomUUID()}`;
    await idp.addKey(kid, false);
    return idp.token({ sub: "x", aud: AUDIENCE, tenant: "acme" }, { kid });
  }

  /** HS256 keyed with the issuer's public key: accepted by a verifier that lets the token pick the algorithm. */
  async function hmacWithPublicKey(): Promise<string> {
    const secret = new TextEncoder().encode(JSON.stringify(idp.publicJwk("key-1")));
    return new SignJWT({ sub: "x", aud: AUDIENCE, tenant: "acme" })
      .setProtectedHeader({ alg: "HS256", kid: "key-1" })
      .setIssuer(idp.issuer)
      .setExpirationTime("10m")
      .sign(secret);
  }

  it.each(badTokens)("HTTP: %s → 401 invalid_token", async (_name, make, reason) => {
    const bad = await make();
    const res = await rpc("tasks/get", { id: "x" }, bad);
    expect(res.status).toBe(401);
    expect(res.body.error?.message).toMatch(/^invalid token: /);
    expect(res.body.error?.message).toMatch(reason);
    expect(res.headers.get("www-authenticate")).toMatch(
      /^Bearer realm="openwop-a2a-host", error="invalid_token", error_description="invalid token: /,
    );
    const rest = await fetch(`${t.baseUrl}/v1/runs/x`, { headers: { authorization: `Bearer ${bad}` } });
    expect(rest.status).toBe(401);
    expect(rest.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  it.each(badTokens)("gRPC: %s → UNAUTHENTICATED", async (_name, make, reason) => {
    const err = (await grpcGetTask("tasks/x", await make())) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(err.details).toMatch(reason);
  });

  it("the cards and the OpenAPI document declare both schemes, and nothing else", async () => {
    const openIdConnectUrl = `${idp.issuer}/.well-known/openid-configuration`;
    const v03 = (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as Obj;
    expect(Object.keys(v03["securitySchemes"]).sort()).toEqual(["apiKey", "oidc"]);
    expect(v03["securitySchemes"]["oidc"]).toEqual(
      expect.objectContaining({ type: "openIdConnect", openIdConnectUrl }),
    );
    expect(v03["securitySchemes"]["apiKey"]).toEqual(expect.objectContaining({ type: "http", scheme: "bearer" }));
    expect(v03["security"]).toEqual([{ oidc: [] }, { apiKey: [] }]);
    const v10 = (await (
      await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })
    ).json()) as Obj;
    expect(v10["securitySchemes"]).toEqual({
      oidc: { openIdConnectSecurityScheme: expect.objectContaining({ openIdConnectUrl }) },
      apiKey: { httpAuthSecurityScheme: expect.objectContaining({ scheme: "bearer" }) },
    });
    expect(v10["securityRequirements"]).toEqual([
      { schemes: { oidc: { list: [] } } },
      { schemes: { apiKey: { list: [] } } },
    ]);
    const discovery = (await (await fetch(`${t.baseUrl}/.well-known/openwop`)).json()) as Obj;
    expect(discovery["auth"]).toMatchObject({
      required: true,
      schemes: v03["securitySchemes"],
      security: [{ oidc: [] }, { apiKey: [] }],
    });
    // The OpenWOP v1 auth profiles an OIDC issuer meets (test/integration/openwop-auth-profiles.test.ts has the rest).
    expect(discovery["auth"]["profiles"]).toEqual([
      "openwop-auth-oidc-user-bearer",
      "openwop-auth-oauth2-client-credentials",
    ]);
    const openapi = (await (
      await fetch(`${t.baseUrl}/v1/openapi.json`, { headers: { authorization: `Bearer ${API_KEY}` } })
    ).json()) as Obj;
    expect(Object.keys(openapi["components"]["securitySchemes"]).sort()).toEqual(["apiKey", "oidc"]);
    expect(openapi["security"]).toEqual([{ oidc: [] }, { apiKey: [] }]);
  });
});
