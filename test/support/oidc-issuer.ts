import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from "jose";

/** How the JWKS endpoint answers: normally, not at all (503), too slowly, or with bytes that are no JSON. */
export type JwksMode = "ok" | "down" | "slow" | "garbage";

/**
 * The user the authorization endpoint signs in without asking (the test's IdP login page, approved at once), for
 * the client it is registered with: the access token it gets carries `claims`, for `audience`, living `lifetimeSeconds`.
 */
export interface SignInClient {
  clientId: string;
  redirectUri: string;
  audience: string;
  claims: JWTPayload;
  lifetimeSeconds?: number;
}

/** One authorization code: single use, bound to its client, redirect URI and PKCE challenge (RFC 7636 §4.6). */
interface IssuedCode {
  clientId: string;
  redirectUri: string;
  challenge: string;
  used: boolean;
}

/**
 * A real OpenID issuer on loopback: discovery document, a JWKS endpoint whose behaviour a test switches, and
 * ES256 keys made with jose. Tokens it signs carry its issuer; the test picks audience and claims.
 */
export class OidcIssuer {
  mode: JwksMode = "ok";
  jwksFetches = 0;
  /** Set to serve /authorize and /token (authorization code with PKCE S256) for this client. */
  signIn: SignInClient | undefined;
  /** The token endpoint's answers, in order: "issued" or the OAuth error code it refused with. */
  readonly tokenAnswers: string[] = [];
  private readonly codes = new Map<string, IssuedCode>();
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
        const signIn = {
          authorization_endpoint: `${issuer.issuer}/authorize`,
          token_endpoint: `${issuer.issuer}/token`,
          code_challenge_methods_supported: ["S256"],
        };
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            issuer: issuer.issuer,
            jwks_uri: `${issuer.issuer}/jwks`,
            id_token_signing_alg_values_supported: ["ES256"],
            ...signIn,
          }),
        );
        return;
      }
      if (req.url?.startsWith("/authorize?"))
        return issuer.authorize(new URL(req.url, issuer.issuer).searchParams, res);
      if (req.url === "/token" && req.method === "POST") return void issuer.tokenRequest(req, res);
      if (req.url !== "/jwks") return void res.writeHead(404).end();
      issuer.jwksFetches++;
      if (issuer.mode === "down") return void res.writeHead(503).end();
      if (issuer.mode === "garbage")
        return void res.writeHead(200, { "content-type": "application/json" }).end("{not json");
      const body = JSON.stringify({ keys: [...keys.values()].filter((k) => k.published).map((k) => k.publicJwk) });
      if (issuer.mode === "slow")
        return void setTimeout(
          () => res.writeHead(200, { "content-type": "application/json" }).end(body),
          10_000,
        ).unref();
      res.writeHead(200, { "content-type": "application/json" }).end(body);
    };
    const server = options.tls
      ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, serve)
      : createServer(serve);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const scheme = options.tls ? "https" : "http";
    const issuer = (ref.issuer = new OidcIssuer(
      server,
      `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`,
      keys,
    ));
    await issuer.addKey("key-1");
    return issuer;
  }

  /** A new signing key under `kid`, in the JWKS unless `published` is false (a key nobody trusts). */
  async addKey(kid: string, published = true): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
    this.keys.set(kid, {
      privateKey,
      publicJwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" },
      published,
    });
  }

  /** The authorization endpoint: checks the request as an IdP would, then "the user approves" at once. */
  private authorize(query: URLSearchParams, res: ServerResponse): void {
    const client = this.signIn;
    const refuse = (why: string) => void res.writeHead(400, { "content-type": "text/plain" }).end(why);
    if (!client || query.get("client_id") !== client.clientId) return refuse("unknown client_id");
    // An unregistered redirect URI is never redirected to (RFC 6749 §4.1.2.1).
    if (query.get("redirect_uri") !== client.redirectUri) return refuse("redirect_uri is not registered");
    const back = new URL(client.redirectUri);
    const state = query.get("state");
    if (state !== null) back.searchParams.set("state", state);
    const challenge = query.get("code_challenge");
    if (query.get("response_type") !== "code" || query.get("code_challenge_method") !== "S256" || !challenge) {
      back.searchParams.set("error", "invalid_request");
      return void res.writeHead(302, { location: back.href }).end();
    }
    const code = randomBytes(16).toString("base64url");
    this.codes.set(code, { clientId: client.clientId, redirectUri: client.redirectUri, challenge, used: false });
    back.searchParams.set("code", code);
    res.writeHead(302, { location: back.href }).end();
  }

  /** The token endpoint: the authorization_code grant, each code once, only with the verifier of its challenge. */
  private async tokenRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
    const refuse = (error: string) => {
      this.tokenAnswers.push(error);
      res
        .writeHead(400, { "content-type": "application/json", "cache-control": "no-store" })
        .end(JSON.stringify({ error }));
    };
    const client = this.signIn;
    if (!client || form.get("client_id") !== client.clientId) return refuse("invalid_client");
    if (form.get("grant_type") !== "authorization_code") return refuse("unsupported_grant_type");
    const code = this.codes.get(form.get("code") ?? "");
    if (!code || code.clientId !== client.clientId) return refuse("invalid_grant");
    // Single use: a second exchange of the same code is refused (RFC 6749 §4.1.2), whatever it carries.
    if (code.used) return refuse("invalid_grant");
    code.used = true;
    if (form.get("redirect_uri") !== code.redirectUri) return refuse("invalid_grant");
    const verifier = form.get("code_verifier");
    // RFC 7636 §4.6: BASE64URL(SHA256(code_verifier)) must equal the challenge; no verifier, no token.
    if (!verifier || createHash("sha256").update(verifier).digest("base64url") !== code.challenge)
      return refuse("invalid_grant");
    const lifetime = client.lifetimeSeconds ?? 3600;
    const accessToken = await this.token(
      { ...client.claims, aud: client.audience },
      { expiresAt: Math.floor(Date.now() / 1000) + lifetime },
    );
    this.tokenAnswers.push("issued");
    res
      .writeHead(200, { "content-type": "application/json", "cache-control": "no-store" })
      .end(JSON.stringify({ access_token: accessToken, token_type: "Bearer", expires_in: lifetime }));
  }

  publicJwk(kid: string): JWK {
    return this.keys.get(kid)!.publicJwk;
  }

  /**
   * A token signed with `kid`'s key; `claims` and the options override the defaults (this issuer, issued now, an
   * hour's life); `null` leaves `exp` or `iat` out.
   */
  async token(
    claims: JWTPayload,
    options: {
      kid?: string;
      issuer?: string;
      expiresAt?: number | null;
      issuedAt?: number | null;
      notBefore?: number;
    } = {},
  ): Promise<string> {
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
