// The OAuth2 client-credentials provider against a real token endpoint on loopback, through the real guarded
// peer HTTP client: one fetch for concurrent callers, a token endpoint refused by the egress guard without the
// test switch, and answers the provider does not take (no Bearer token type, no access_token).
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EgressPolicy } from "../../src/egress/egress-guard.js";
import { createOAuth2PeerCredentials, type OAuth2Settings } from "../../src/peer/oauth2-peer-credentials.js";
import { createPeerHttpClient, PeerCallError } from "../../src/peer/peer-http-client.js";
import { SecretValue } from "../../src/secrets/secret-value.js";

const SECRET = `secret-${randomBytes(8).toString("hex")}`;
const LOOPBACK_TEST: EgressPolicy = { allowHttpLoopback: true, allowedPorts: [], allowHosts: [], denyHosts: [] };
const STRICT: EgressPolicy = { allowHttpLoopback: false, allowedPorts: [], allowHosts: [], denyHosts: [] };

describe("OAuth2 client-credentials peer credentials", () => {
  let server: Server;
  let base = "";
  let fetches = 0;
  beforeAll(async () => {
    // /slow answers after 100 ms (so concurrent callers overlap); /plain answers a token_type that is not Bearer.
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        fetches++;
        const answer = (body: unknown) =>
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
        if (req.url === "/plain") return answer({ access_token: "t", token_type: "mac", expires_in: 3600 });
        if (req.url === "/empty") return answer({ token_type: "Bearer" });
        setTimeout(() => answer({ access_token: `tok-${fetches}`, token_type: "bearer", expires_in: 3600 }), 100);
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  const settings = (path: string): OAuth2Settings => ({
    kind: "oauth2",
    tokenUrl: `${base}${path}`,
    clientId: "c",
    clientSecret: new SecretValue(SECRET),
  });

  it("concurrent calls wait for one fetch; after a 401 the next call fetches a new token", async () => {
    const http = createPeerHttpClient({ policy: LOOPBACK_TEST });
    const credentials = createOAuth2PeerCredentials({ peer: "p", settings: settings("/slow"), http, timeoutMs: 2000 });
    fetches = 0;
    const all = await Promise.all(Array.from({ length: 5 }, () => credentials.headersFor({})));
    expect(fetches).toBe(1);
    expect(new Set(all.map((h) => h["authorization"]))).toEqual(new Set(["Bearer tok-1"]));
    expect(credentials.onUnauthorized()).toBe(true);
    expect((await credentials.headersFor({}))["authorization"]).toBe("Bearer tok-2");
    expect(credentials.secrets()).toEqual(expect.arrayContaining([SECRET, "tok-1", "tok-2"]));
    await http.close();
  });

  it("the token endpoint goes through the egress guard: loopback is refused without the test switch (final)", async () => {
    const http = createPeerHttpClient({ policy: STRICT });
    const credentials = createOAuth2PeerCredentials({ peer: "p", settings: settings("/slow"), http, timeoutMs: 2000 });
    fetches = 0;
    const err = (await credentials.headersFor({}).catch((e: unknown) => e)) as PeerCallError;
    expect(err).toBeInstanceOf(PeerCallError);
    expect(err.message).toContain('the OAuth2 token endpoint for peer "p"');
    expect(err.message).toContain("egress guard");
    expect(err.retryable).toBe(false);
    expect(fetches).toBe(0);
    await http.close();
  });

  it("an answer without a Bearer access token is refused with a clear, retryable reason", async () => {
    const http = createPeerHttpClient({ policy: LOOPBACK_TEST });
    for (const [path, said] of [
      ["/plain", 'a token_type other than "Bearer"'],
      ["/empty", "without a usable access_token"],
    ] as const) {
      const err = (await createOAuth2PeerCredentials({ peer: "p", settings: settings(path), http, timeoutMs: 2000 })
        .headersFor({})
        .catch((e: unknown) => e)) as PeerCallError;
      expect(err.message).toContain(said);
      expect(err.kind).toBe("credentials");
      expect(err.retryable).toBe(true);
    }
    await http.close();
  });
});
