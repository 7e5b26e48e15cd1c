import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  decodeJwt,
  errors,
  jwtVerify,
  type JWSHeaderParameters,
  type FlattenedJWSInput,
  type JWTPayload,
  type CryptoKey,
} from "jose";
import { ASYMMETRIC_JWS_ALGORITHMS } from "../domain/asymmetric-algorithms.js";
import { egressFetch } from "../egress/egress-fetch.js";
import type { EgressPolicy, Resolver } from "../egress/egress-guard.js";
import { createEgressHttpClient, type EgressHttpClient } from "../egress/egress-http-client.js";
import { DomainError } from "../domain/errors.js";
import {
  bearerOf,
  isJwtShaped,
  type AuthDescription,
  type Authenticator,
  type SecurityScheme,
} from "./authenticator.js";
import type { OidcIssuerSettings, OidcSettings } from "./oidc-settings.js";
import { SCOPES, type Principal, type Scope } from "./principal.js";
import { tokenLifetimeProblem } from "./token-lifetime.js";
import { discoveredEndpoint, discoveryUrlOf, readDiscovery } from "./oidc-discovery.js";

export { discoveryUrlOf };

/** Larger bearers are refused before any parsing. */
const MAX_TOKEN_CHARS = 8192;
/** Clock skew tolerated on exp/nbf/iat, in seconds. */
export const CLOCK_TOLERANCE_SECONDS = 30;
/** A failed discovery is retried after this long; until then tokens fail closed (401). */
const DISCOVERY_RETRY_MS = 5_000;
/** A discovery document or a JWKS larger than this is refused. */
const MAX_DOCUMENT_BYTES = 1024 * 1024;

/** What the authenticator tells the host's log and metrics (auth/ knows neither). */
export interface OidcObserver {
  /** A token refused for a reason the answer does not carry (its lifetime), for the operator's log. */
  refused(issuer: string, reason: string): void;
  /** A TLS failure toward an issuer's discovery or JWKS (`code`: Node's or OpenSSL's). */
  tlsFailure(where: string, code: string): void;
}

export interface OidcAuthenticatorOptions {
  /** How long one fetch (discovery or JWKS) may take (default 3 s). */
  timeoutMs?: number;
  /** Overrides `settings.jwksCooldownMs` (tests). */
  cooldownMs?: number;
  /** How long a fetched JWKS counts as fresh before it is refetched (default 10 min, jose's). */
  cacheMaxAgeMs?: number;
  observer?: OidcObserver;
  /** Tests only: the DNS resolver of the egress guard. */
  resolve?: Resolver;
}

/**
 * What the issuer's fetches may reach (egress/egress-guard.ts): the issuer itself, on its port, even on a private
 * address (the operator named it; an identity provider inside the network is common), and public https
 * addresses; never metadata, link-local or special-purpose ones, and nothing else private. So a discovery
 * document cannot send our JWKS fetch to an internal address. http:// only to loopback under the test switch.
 */
export function oidcEgressPolicy(settings: Pick<OidcIssuerSettings, "issuer" | "allowInsecure">): EgressPolicy {
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

/** The egress client for one issuer's discovery, JWKS and (the console's sign-in) token endpoint. */
export function oidcEgressClient(
  settings: OidcIssuerSettings,
  options: Pick<OidcAuthenticatorOptions, "observer" | "resolve"> = {},
): EgressHttpClient {
  return createEgressHttpClient({
    policy: oidcEgressPolicy(settings),
    subject: "OIDC",
    userAgent: "openwop-a2a-host/oidc",
    maxResponseBytes: MAX_DOCUMENT_BYTES,
    accept: "application/json",
    ...(settings.ca !== undefined ? { ca: settings.ca } : {}),
    ...(options.observer
      ? { onTlsFailure: (where: string, code: string) => options.observer!.tlsFailure(where, code) }
      : {}),
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
}

type KeyGetter = (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;

/**
 * OIDC/OAuth2 access tokens (`Authorization: Bearer <JWT>`) from the configured issuers. A token is checked against
 * the one issuer its `iss` names, and no other: that issuer's keys (its discovery document's `jwks_uri`, jose's
 * cached remote JWKS, refetched on an unknown `kid` at most once per cool-down), its audience, its token lifetime
 * and its claims. Discovery and the JWKS come through the egress client under `oidcEgressPolicy`, trusting the
 * issuer's CA bundle when one is set. When the JWKS endpoint is down, slow or answers garbage, keys already known
 * keep verifying from the last good set; an unknown `kid` fails closed (401). The tenant and scopes come from
 * configured claims: the same Principal an API key gives.
 */
export function oidcAuthenticator(settings: OidcSettings, options: OidcAuthenticatorOptions = {}): Authenticator {
  const verifiers = new Map(
    settings.issuers.map((issuer) => [
      issuer.issuer,
      issuerVerifier(issuer, { ...options, cooldownMs: options.cooldownMs ?? settings.jwksCooldownMs }),
    ]),
  );
  const description = describeIssuers(settings.issuers);

  return {
    recognises({ headers }) {
      const bearer = bearerOf(headers);
      return bearer !== undefined && isJwtShaped(bearer);
    },
    async authenticate({ headers }) {
      const token = bearerOf(headers);
      if (!token)
        throw new DomainError("unauthenticated", "missing credentials: send Authorization: Bearer <access token>");
      if (token.length > MAX_TOKEN_CHARS)
        throw new DomainError("unauthenticated", `invalid token: longer than ${MAX_TOKEN_CHARS} characters`);
      if (!isJwtShaped(token)) throw new DomainError("unauthenticated", "invalid token: not a JWT");
      let iss: unknown;
      try {
        iss = decodeJwt(token).iss;
      } catch {
        throw new DomainError("unauthenticated", "invalid token: malformed");
      }
      // The unverified `iss` only picks whose keys, audience and rules the token is then verified with.
      const verify = typeof iss === "string" ? verifiers.get(iss) : undefined;
      if (!verify)
        throw new DomainError("unauthenticated", 'invalid token: its "iss" is not an issuer this host accepts');
      return verify(token);
    },
    describe: () => description,
  };
}

function issuerVerifier(
  settings: OidcIssuerSettings,
  options: OidcAuthenticatorOptions & { cooldownMs: number },
): (token: string) => Promise<Principal> {
  const keyGetter = issuerKeys(settings, options);
  return async (token) => {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await keyGetter(), {
        issuer: settings.issuer,
        audience: settings.audience,
        algorithms: [...ASYMMETRIC_JWS_ALGORITHMS],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      }));
    } catch (err) {
      throw new DomainError("unauthenticated", `invalid token: ${reasonOf(err)}`);
    }
    const lifetime = tokenLifetimeProblem(
      payload,
      settings.maxTokenLifetimeSeconds,
      Math.floor(Date.now() / 1000),
      CLOCK_TOLERANCE_SECONDS,
    );
    if (lifetime) {
      // The exact rule broken goes to the operator's log; the caller learns only that the lifetime is refused.
      options.observer?.refused(settings.issuer, lifetime);
      // Its own code: the OpenWOP v2 lane advertises this bound as `exp-only` (credential_lifetime_exceeded).
      throw new DomainError(
        "credential-lifetime-exceeded",
        "invalid token: its lifetime is not accepted (it needs exp and iat, within the issuer's maximum)",
      );
    }
    return principalOf(payload, settings);
  };
}

/** The issuer's keys, discovered once (retried after a failure) and cached by jose. */
function issuerKeys(
  settings: OidcIssuerSettings,
  options: OidcAuthenticatorOptions & { cooldownMs: number },
): () => Promise<KeyGetter> {
  const timeoutMs = options.timeoutMs ?? 3_000;
  const http = oidcEgressClient(settings, options);
  let keys: Promise<KeyGetter> | undefined;
  let failedAt = 0;

  async function discover(): Promise<KeyGetter> {
    const jwksUrl = discoveredEndpoint(await readDiscovery(http, settings, timeoutMs), "jwks_uri", settings);
    if (!jwksUrl) throw new Error("OIDC discovery has no jwks_uri");
    // The cool-down bounds both how long a key the IdP just rotated in is refused and what a flood of random kids
    // costs: at most one JWKS fetch per cool-down, however many tokens name unknown kids.
    const remote = createRemoteJWKSet(jwksUrl, {
      timeoutDuration: timeoutMs,
      cooldownDuration: options.cooldownMs,
      cacheMaxAge: options.cacheMaxAgeMs ?? 600_000,
      [customFetch]: egressFetch(http, timeoutMs),
    });
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

  return () => {
    if (!keys && Date.now() - failedAt >= DISCOVERY_RETRY_MS) {
      keys = discover().catch((err: unknown) => {
        failedAt = Date.now();
        keys = undefined;
        throw err;
      });
    }
    return keys ?? Promise.reject(new Error("OIDC discovery failed recently"));
  };
}

/** One `openIdConnect` scheme per issuer (`oidc`, then `oidc-2`, …), any one of which suffices. */
function describeIssuers(issuers: readonly OidcIssuerSettings[]): AuthDescription {
  const names = issuers.map((_, i) => (i === 0 ? "oidc" : `oidc-${i + 1}`));
  const schemes: Record<string, SecurityScheme> = {};
  issuers.forEach((issuer, i) => {
    schemes[names[i]!] = {
      type: "openIdConnect",
      openIdConnectUrl: discoveryUrlOf(issuer.issuer),
      description: `An access token from ${issuer.issuer} for audience ${issuer.audience}: Authorization: Bearer <token>`,
    };
  });
  const summary =
    issuers.length === 1
      ? `OIDC tokens from ${issuers[0]!.issuer} (audience ${issuers[0]!.audience})`
      : `OIDC tokens from ${issuers.length} issuers (${issuers.map((i) => i.issuer).join(", ")})`;
  return {
    enabled: true,
    schemes,
    requirements: names.map((name) => ({ [name]: [] })),
    tenants: [],
    allTenantsHolders: [],
    summary,
    asks: "an access token (Authorization: Bearer <token>)",
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

/**
 * The caller a verified token names: its tenant (the issuer's fixed `tenant`, else the tenant claim) and who it is.
 * A user's token names them in `sub`; an OAuth2 client-credentials token (a machine caller, RFC 9068 §2.2) usually
 * carries the client there too, and where an identity provider leaves `sub` out, the client is `client_id`
 * (RFC 8693 §4.3) or `azp`: such a caller is `oidc:client:<id>`, never taken for a user of the same name.
 */
function principalOf(payload: JWTPayload, settings: OidcIssuerSettings): Principal {
  const tenant = settings.tenant ?? payload[settings.tenantClaim];
  if (typeof tenant !== "string" || !tenant || tenant === "*")
    throw new DomainError("unauthenticated", `invalid token: no "${settings.tenantClaim}" claim naming a tenant`);
  const named = (claim: string): string | undefined => {
    const value = payload[claim];
    return typeof value === "string" && value ? value : undefined;
  };
  const subject = named("sub");
  // RFC 9068 §2.2 names the client `client_id`; Entra ID and many others say `azp` (OIDC Core §2).
  const clientId = named("client_id") ?? named("azp");
  if (subject === undefined && clientId === undefined)
    throw new DomainError("unauthenticated", 'invalid token: no "sub" (nor, for a client, "client_id") claim');
  return {
    tenant,
    id: subject !== undefined ? `oidc:${subject}` : `oidc:client:${clientId}`,
    scopes: scopesOf(payload, settings),
    ...(clientId ? { clientId } : {}),
  };
}

/**
 * The token's own scopes (space-separated `scope`, RFC 8693, or an array, `scp` in Entra ID) and those its groups
 * are granted in `groupScopes`; names we do not know are ignored.
 */
function scopesOf(payload: JWTPayload, settings: OidcIssuerSettings): Scope[] {
  const claim = settings.scopeClaim;
  const names = namesOf(payload[claim] ?? (claim === "scope" ? payload["scp"] : undefined));
  if (settings.groupsClaim && settings.groupScopes) {
    for (const group of namesOf(payload[settings.groupsClaim])) names.push(...(settings.groupScopes[group] ?? []));
  }
  return [...new Set(names.filter((s): s is Scope => (SCOPES as readonly string[]).includes(s)))];
}

function namesOf(raw: unknown): string[] {
  return typeof raw === "string"
    ? raw.split(" ")
    : Array.isArray(raw)
      ? raw.filter((s): s is string => typeof s === "string")
      : [];
}
