import { createLocalJWKSet, createRemoteJWKSet, customFetch, errors, jwtVerify, type JWSHeaderParameters, type FlattenedJWSInput, type JWTPayload, type CryptoKey } from "jose";
import { ASYMMETRIC_JWS_ALGORITHMS } from "../domain/asymmetric-algorithms.js";
import { egressFetch } from "../egress/egress-fetch.js";
import type { EgressPolicy, Resolver } from "../egress/egress-guard.js";
import { createEgressHttpClient } from "../egress/egress-http-client.js";
import { DomainError } from "../domain/errors.js";
import { bearerOf, isJwtShaped, type AuthDescription, type Authenticator } from "./authenticator.js";
import type { OidcSettings } from "./oidc-settings.js";
import { SCOPES, type Principal, type Scope } from "./principal.js";

/** Asymmetric signatures only: never `none`, never HS* (an HMAC "signed" with the public key would verify). */
/** Larger bearers are refused before any parsing. */
const MAX_TOKEN_CHARS = 8192;
/** Clock skew tolerated on exp/nbf/iat, in seconds. */
const CLOCK_TOLERANCE_SECONDS = 30;
/** A failed discovery is retried after this long; until then tokens fail closed (401). */
const DISCOVERY_RETRY_MS = 5_000;
/** A discovery document or a JWKS larger than this is refused. */
const MAX_DOCUMENT_BYTES = 1024 * 1024;

export interface OidcAuthenticatorOptions {
  /** How long one fetch (discovery or JWKS) may take (default 3 s). */
  timeoutMs?: number;
  /** jose's cooldown: the JWKS is refetched for an unknown `kid` at most this often (default 30 s). */
  cooldownMs?: number;
  /** How long a fetched JWKS counts as fresh before it is refetched (default 10 min, jose's). */
  cacheMaxAgeMs?: number;
  /** Tests only: the DNS resolver of the egress guard. */
  resolve?: Resolver;
}

/**
 * What the issuer's fetches may reach (egress/egress-guard.ts): the issuer itself, on its port, even on a private
 * address (the operator named it; an identity provider inside the network is common), and public https
 * addresses; never metadata, link-local or special-purpose ones, and nothing else private. So a discovery
 * document cannot send our JWKS fetch to an internal address. http:// only to loopback under the test switch.
 */
export function oidcEgressPolicy(settings: Pick<OidcSettings, "issuer" | "allowInsecure">): EgressPolicy {
  const issuer = new URL(settings.issuer);
  const port = issuer.port !== "" ? Number(issuer.port) : issuer.protocol === "https:" ? 443 : 80;
  return {
    allowHttpLoopback: settings.allowInsecure,
    allowedPorts: issuer.port !== "" ? [port] : [],
    allowHosts: [],
    denyHosts: [],
    privateHosts: [`${issuer.hostname}:${port}`],
  };
}

type KeyGetter = (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;

/**
 * OIDC/OAuth2 access tokens (`Authorization: Bearer <JWT>`) from one issuer: keys from its discovery document's
 * `jwks_uri` (jose's cached remote JWKS, refetched on an unknown `kid` within its cooldown), both fetched through
 * the egress client under `oidcEgressPolicy`. When the JWKS
 * endpoint is down, slow or answers garbage, keys already known keep verifying from the last good set; an
 * unknown `kid` fails closed (401). The tenant and scopes come from configured claims: the same Principal an
 * API key gives.
 */
export function oidcAuthenticator(settings: OidcSettings, options: OidcAuthenticatorOptions = {}): Authenticator {
  const timeoutMs = options.timeoutMs ?? 3_000;
  const discoveryUrl = `${settings.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
  // Discovery and the JWKS go out through the one outbound client, under the issuer's policy.
  const http = createEgressHttpClient({
    policy: oidcEgressPolicy(settings),
    subject: "OIDC",
    userAgent: "openwop-a2a-host/oidc",
    maxResponseBytes: MAX_DOCUMENT_BYTES,
    accept: "application/json",
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  let keys: Promise<KeyGetter> | undefined;
  let failedAt = 0;

  function keyGetter(): Promise<KeyGetter> {
    if (!keys && Date.now() - failedAt >= DISCOVERY_RETRY_MS) {
      keys = discover().catch((err: unknown) => {
        failedAt = Date.now();
        keys = undefined;
        throw err;
      });
    }
    return keys ?? Promise.reject(new Error("OIDC discovery failed recently"));
  }

  async function discover(): Promise<KeyGetter> {
    const response = await http.request({ method: "GET", url: discoveryUrl, timeoutMs, returnErrorStatus: true });
    if (response.status !== 200) throw new Error(`OIDC discovery answered ${response.status}`);
    const document = JSON.parse(response.body) as { issuer?: unknown; jwks_uri?: unknown };
    // OpenID Connect Discovery §4.3: the document's issuer is exactly the one we were configured with.
    if (document.issuer !== settings.issuer) throw new Error("OIDC discovery names another issuer");
    if (typeof document.jwks_uri !== "string") throw new Error("OIDC discovery has no jwks_uri");
    const jwksUrl = new URL(document.jwks_uri);
    if (jwksUrl.protocol !== "https:" && !(settings.allowInsecure && jwksUrl.protocol === "http:")) throw new Error("jwks_uri must be https://");
    const remote = createRemoteJWKSet(jwksUrl, { timeoutDuration: timeoutMs, cooldownDuration: options.cooldownMs ?? 30_000, cacheMaxAge: options.cacheMaxAgeMs ?? 600_000, [customFetch]: egressFetch(http, timeoutMs) });
    return async (header, token) => {
      try {
        return await remote(header, token);
      } catch (err) {
        // The endpoint failed on a refresh (down, slow, garbage): known keys keep working from the last good set.
        const stale = remote.jwks();
        if (stale && !(err instanceof errors.JWKSNoMatchingKey)) return createLocalJWKSet(stale)(header, token);
        throw err;
      }
    };
  }

  const description: AuthDescription = {
    enabled: true,
    schemes: { oidc: { type: "openIdConnect", openIdConnectUrl: discoveryUrl, description: `An access token from ${settings.issuer} for audience ${settings.audience}: Authorization: Bearer <token>` } },
    requirements: [{ oidc: [] }],
    tenants: [],
    allTenantsHolders: [],
    summary: `OIDC tokens from ${settings.issuer} (audience ${settings.audience})`,
  };

  return {
    recognises({ headers }) {
      const bearer = bearerOf(headers);
      return bearer !== undefined && isJwtShaped(bearer);
    },
    async authenticate({ headers }) {
      const token = bearerOf(headers);
      if (!token) throw new DomainError("unauthenticated", "missing credentials: send Authorization: Bearer <access token>");
      if (token.length > MAX_TOKEN_CHARS) throw new DomainError("unauthenticated", `invalid token: longer than ${MAX_TOKEN_CHARS} characters`);
      if (!isJwtShaped(token)) throw new DomainError("unauthenticated", "invalid token: not a JWT");
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, await keyGetter(), { issuer: settings.issuer, audience: settings.audience, algorithms: [...ASYMMETRIC_JWS_ALGORITHMS], clockTolerance: CLOCK_TOLERANCE_SECONDS }));
      } catch (err) {
        throw new DomainError("unauthenticated", `invalid token: ${reasonOf(err)}`);
      }
      return principalOf(payload, settings);
    },
    describe: () => description,
  };
}

/** A short, safe reason (never the token, never a key). */
function reasonOf(err: unknown): string {
  if (err instanceof errors.JWTExpired) return "expired";
  if (err instanceof errors.JWTClaimValidationFailed) return `claim "${err.claim}" check failed (${err.reason})`;
  if (err instanceof errors.JWKSNoMatchingKey) return "signed by an unknown key";
  if (err instanceof errors.JOSEAlgNotAllowed) return "algorithm not allowed";
  if (err instanceof errors.JWSSignatureVerificationFailed) return "signature verification failed";
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return "malformed";
  return "the issuer's keys are unavailable";
}

function principalOf(payload: JWTPayload, settings: OidcSettings): Principal {
  const tenant = payload[settings.tenantClaim];
  if (typeof tenant !== "string" || !tenant || tenant === "*") throw new DomainError("unauthenticated", `invalid token: no "${settings.tenantClaim}" claim naming a tenant`);
  const subject = typeof payload.sub === "string" && payload.sub ? payload.sub : undefined;
  if (!subject) throw new DomainError("unauthenticated", 'invalid token: no "sub" claim');
  return { tenant, id: `oidc:${subject}`, scopes: scopesOf(payload, settings.scopeClaim) };
}

/** Space-separated (`scope`, RFC 8693) or an array (`scp`, Entra ID); names we do not know are ignored. */
function scopesOf(payload: JWTPayload, claim: string): Scope[] {
  const raw = payload[claim] ?? (claim === "scope" ? payload["scp"] : undefined);
  const names = typeof raw === "string" ? raw.split(" ") : Array.isArray(raw) ? raw.filter((s): s is string => typeof s === "string") : [];
  return [...new Set(names.filter((s): s is Scope => (SCOPES as readonly string[]).includes(s)))];
}
