import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from "jose";

/** How the JWKS endpoint answers: normally, not at all (503), too slowly, or with bytes that are no JSON. */
export type JwksMode = "ok" | "down" | "slow" | "garbage";

/**
 * A real OpenID issuer on loopback: discovery document, a JWKS endpoint whose behaviour a test switches, and
 * ES256 keys made with jose. Tokens it signs carry its issuer; the test picks audience and claims.
 */
export class OidcIssuer {
  mode: JwksMode = "ok";
  jwksFetches = 0;
  private constructor(
    private readonly server: Server,
    readonly issuer: string,
    private readonly keys: Map<string, { privateKey: CryptoKey; publicJwk: JWK; published: boolean }>,
  ) {}

  /** On http://127.0.0.1, or https:// with `tls` (a certificate for 127.0.0.1, e.g. from a private CA). */
  static async start(options: { tls?: { cert: Buffer; key: Buffer } } = {}): Promise<OidcIssuer> {
    const keys = new Map<string, { privateKey: CryptoKey; publicJwk: JWK; published: boolean }>();
    const ref: { issuer?: OidcIssuer } = {};
    const serve = (req: IncomingMessage, res: ServerResponse): void => {
      const issuer = ref.issuer!;
      if (req.url === "/.well-known/openid-configuration") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ issuer: issuer.issuer, jwks_uri: `${issuer.issuer}/jwks`, id_token_signing_alg_values_supported: ["ES256"] }));
        return;
      }
      if (req.url !== "/jwks") return void res.writeHead(404).end();
      issuer.jwksFetches++;
      if (issuer.mode === "down") return void res.writeHead(503).end();
      if (issuer.mode === "garbage") return void res.writeHead(200, { "content-type": "application/json" }).end("{not json");
      const body = JSON.stringify({ keys: [...keys.values()].filter((k) => k.published).map((k) => k.publicJwk) });
      if (issuer.mode === "slow") return void setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(body), 10_000).unref();
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    };
    const server = options.tls ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, serve) : createServer(serve);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const scheme = options.tls ? "https" : "http";
    const issuer = (ref.issuer = new OidcIssuer(server, `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`, keys));
    await issuer.addKey("key-1");
    return issuer;
  }

  /** A new signing key under `kid`, in the JWKS unless `published` is false (a key nobody trusts). */
  async addKey(kid: string, published = true): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
    this.keys.set(kid, { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" }, published });
  }

  publicJwk(kid: string): JWK {
    return this.keys.get(kid)!.publicJwk;
  }

  /**
   * A token signed with `kid`'s key; `claims` and the options override the defaults (this issuer, issued now, an
   * hour's life); `null` leaves `exp` or `iat` out.
   */
  async token(claims: JWTPayload, options: { kid?: string; issuer?: string; expiresAt?: number | null; issuedAt?: number | null; notBefore?: number } = {}): Promise<string> {
    const kid = options.kid ?? "key-1";
    const now = Math.floor(Date.now() / 1000);
    let jwt = new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid }).setIssuer(options.issuer ?? this.issuer);
    if (options.issuedAt !== null) jwt = jwt.setIssuedAt(options.issuedAt ?? now);
    if (options.expiresAt !== null) jwt = jwt.setExpirationTime(options.expiresAt ?? now + 3600);
    if (options.notBefore !== undefined) jwt = jwt.setNotBefore(options.notBefore);
    return jwt.sign(this.keys.get(kid)!.privateKey);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
