// JWKS fetches and OAuth2 token requests go out through the one egress client (egress/egress-http-client.ts)
// with their caller's policy: against a real JWKS server and a real token endpoint on loopback, a loopback URL is
// refused (nothing reaches the server) unless the test-only loopback allowance is on, and a private address is
// refused even then; the OIDC issuer's policy lets its own host through and nothing else private.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { oidcEgressPolicy } from "../../src/auth/oidc-authenticator.js";
import { egressFetch } from "../../src/egress/egress-fetch.js";
import { checkEgressUrl, EgressRefusedError, type EgressPolicy, type Resolver } from "../../src/egress/egress-guard.js";
import { createOAuth2PeerCredentials } from "../../src/peer/oauth2-peer-credentials.js";
import { createPeerHttpClient, PeerCallError, type PeerHttpClient } from "../../src/peer/peer-http-client.js";
import { PEER_JWKS_TIMEOUT_MS, PeerJwks } from "../../src/peer/peer-jwks.js";
import { SecretValue } from "../../src/secrets/secret-value.js";
import { OidcIssuer } from "../support/oidc-issuer.js";

const LOOPBACK_TEST: EgressPolicy = { allowHttpLoopback: true, allowedPorts: [], allowHosts: [], denyHosts: [] };
const STRICT: EgressPolicy = { allowHttpLoopback: false, allowedPorts: [], allowHosts: [], denyHosts: [] };

describe("JWKS and OAuth2 token fetches through the egress client", () => {
  let keys: OidcIssuer;
  let tokenServer: Server;
  let tokenBase = "";
  let tokenRequests = 0;
  const clients: PeerHttpClient[] = [];
  const peerHttp = (policy: EgressPolicy) => {
    const client = createPeerHttpClient({ policy });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    keys = await OidcIssuer.start();
    tokenServer = createServer((req, res) => {
      tokenRequests++;
      req.resume();
      req.on("end", () =>
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ access_token: "tok", token_type: "Bearer", expires_in: 3600 })),
      );
    });
    await new Promise<void>((r) => tokenServer.listen(0, "127.0.0.1", r));
    tokenBase = `http://127.0.0.1:${(tokenServer.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await keys.close();
    await new Promise((r) => tokenServer.close(r));
  });

  it("a peer's JWKS URL on loopback is refused by the peer policy (no request reaches it) and fetched under the loopback test allowance", async () => {
    const token = await keys.token({ sub: "peer" });
    const jwksUrl = `${keys.issuer}/jwks`;
    keys.jwksFetches = 0;
    const strict = new PeerJwks(egressFetch(peerHttp(STRICT), PEER_JWKS_TIMEOUT_MS));
    const refused = await jwtVerify(token, strict.keys(jwksUrl)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PeerCallError);
    expect((refused as PeerCallError).kind).toBe("egress");
    expect((refused as Error).message).toMatch(/^peer URL refused by the (scheme|address) arm of the egress guard/);
    expect(keys.jwksFetches).toBe(0);

    const allowed = new PeerJwks(egressFetch(peerHttp(LOOPBACK_TEST), PEER_JWKS_TIMEOUT_MS));
    const { payload } = await jwtVerify(token, allowed.keys(jwksUrl));
    expect(payload.sub).toBe("peer");
    expect(keys.jwksFetches).toBe(1);
  });

  it("a JWKS URL or a token URL on a private (RFC 1918) address is refused even under the loopback test allowance", async () => {
    const http = peerHttp(LOOPBACK_TEST);
    const jwks = new PeerJwks(egressFetch(http, PEER_JWKS_TIMEOUT_MS));
    const refused = await jwtVerify(await keys.token({ sub: "peer" }), jwks.keys("https://10.0.0.5/jwks")).catch(
      (e: unknown) => e,
    );
    expect((refused as PeerCallError).kind).toBe("egress");
    expect((refused as Error).message).toContain("10.0.0.5 is a private (RFC 1918) address");

    const credentials = createOAuth2PeerCredentials({
      peer: "p",
      settings: {
        kind: "oauth2",
        tokenUrl: "https://10.0.0.5/token",
        clientId: "c",
        clientSecret: new SecretValue("s3cret-s3cret"),
      },
      http,
      timeoutMs: 2000,
    });
    const err = (await credentials.headersFor({}).catch((e: unknown) => e)) as PeerCallError;
    expect(err.message).toContain("10.0.0.5 is a private (RFC 1918) address");
    expect(err.retryable).toBe(false);
  });

  it("a token URL on loopback is reached under the loopback test allowance and refused without it", async () => {
    const settings = {
      kind: "oauth2" as const,
      tokenUrl: `${tokenBase}/token`,
      clientId: "c",
      clientSecret: new SecretValue("s3cret-s3cret"),
    };
    tokenRequests = 0;
    const refused = (await createOAuth2PeerCredentials({ peer: "p", settings, http: peerHttp(STRICT), timeoutMs: 2000 })
      .headersFor({})
      .catch((e: unknown) => e)) as PeerCallError;
    expect(refused.message).toContain("egress guard");
    expect(tokenRequests).toBe(0);
    expect(
      await createOAuth2PeerCredentials({
        peer: "p",
        settings,
        http: peerHttp(LOOPBACK_TEST),
        timeoutMs: 2000,
      }).headersFor({}),
    ).toEqual({ authorization: "Bearer tok" });
    expect(tokenRequests).toBe(1);
  });

  // (The scheme of a jwks_uri is checked by the authenticator itself: https, or http under the test switch.)
  it("the OIDC issuer's policy: its own host on its port even when private; public https; nothing else private, never metadata", async () => {
    const resolve: Resolver = async (name) => [
      { address: name === "idp.corp.example" ? "10.1.2.3" : "93.184.216.34", family: 4 },
    ];
    const policy = oidcEgressPolicy({ issuer: "https://idp.corp.example:8443/realms/a", allowInsecure: false });
    expect(
      (await checkEgressUrl("https://idp.corp.example:8443/realms/a/certs", policy, "OIDC", resolve)).addresses,
    ).toEqual([{ address: "10.1.2.3", family: 4 }]);
    expect((await checkEgressUrl("https://keys.example.com/jwks", policy, "OIDC", resolve)).addresses).toEqual([
      { address: "93.184.216.34", family: 4 },
    ]);
    for (const url of [
      "https://10.0.0.5/jwks",
      "https://169.254.169.254/latest/meta-data",
      "https://idp.corp.example/jwks",
    ]) {
      const err = await checkEgressUrl(url, policy, "OIDC", resolve).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, url).toBeInstanceOf(EgressRefusedError);
    }
  });
});
