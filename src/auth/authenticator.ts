import type { PeerCertificate } from "node:tls";
import { DomainError } from "../domain/errors.js";
import type { Principal } from "./principal.js";

/** A request header by lower-case name (the first value when repeated). */
export type HeaderLookup = (name: string) => string | undefined;

/** What an authenticator sees of a request, whatever its binding (HTTP, JSON-RPC, gRPC, Connect, gRPC-Web). */
export interface AuthRequest {
  headers: HeaderLookup;
  /** The client certificate of a mutual-TLS connection, when the listener asked for one and it verified. */
  peerCertificate?: PeerCertificate | undefined;
}

/**
 * A security scheme as the A2A 0.3 card and OpenAPI 3 write it (`type`: apiKey | http | oauth2 | openIdConnect |
 * mutualTLS); the 1.0 card codec turns it into its oneof.
 */
export type SecurityScheme = Record<string, unknown>;

/** What an authenticator tells the rest of the host about itself; nothing outside `auth/` asks which kind it is. */
export interface AuthDescription {
  /** False only in dev mode (AUTH=off): every caller is the dev principal. */
  enabled: boolean;
  /** Card and OpenAPI security schemes, by name. */
  schemes: Record<string, SecurityScheme>;
  /** Alternatives (OR): each names schemes that together suffice (AND). Empty when `enabled` is false. */
  requirements: Array<Record<string, string[]>>;
  /** The tenants the operator console may show a `console:all-tenants` caller. */
  tenants: readonly string[];
  /** Who holds `console:all-tenants` by configuration (API key ids), for the start-up line; tokens decide per call. */
  allTenantsHolders: readonly string[];
  /** The start-up line's words, e.g. "API keys (3)" or "OIDC https://idp.example (audience a2a-host)". */
  summary: string;
  /** The credential it takes, in a caller's words ("an API key (Authorization: Bearer <key>)"), for a request with none. */
  asks?: string;
}

/**
 * The authentication port: every way in (API key, OIDC bearer token, client certificate) is one of these,
 * and all end in the same Principal. `authenticate` answers a Principal directly when it can (API keys: no
 * promise hop on the hot path) or a Promise (token verification that may fetch a JWKS); callers await only
 * a promise. It throws (or rejects with) DomainError `unauthenticated` for a credential it recognises but refuses.
 */
export interface Authenticator {
  /** Whether this request carries the kind of credential this authenticator decides about. */
  recognises(request: AuthRequest): boolean;
  authenticate(request: AuthRequest): Principal | Promise<Principal>;
  describe(): AuthDescription;
}

/** The bearer credential of `Authorization: Bearer <value>`, if any. */
export function bearerOf(headers: HeaderLookup): string | undefined {
  const authorization = headers("authorization");
  return (authorization && /^bearer\s+(.+)$/i.exec(authorization)?.[1]?.trim()) || undefined;
}

/** A compact JWS (three base64url segments): such bearers go to the token authenticator, others to API keys. */
export function isJwtShaped(value: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]*$/.test(value);
}

/**
 * Several ways in side by side: the first authenticator that recognises the request's credential decides
 * (a refusal is final: no fallback to the next); none recognising it is 401. Descriptions are merged.
 */
export function chain(...authenticators: Authenticator[]): Authenticator {
  if (authenticators.length === 1) return authenticators[0]!;
  const description = mergeDescriptions(authenticators.map((a) => a.describe()));
  // What this host takes, as configured: a caller with none of it is told exactly those.
  const asks = authenticators.flatMap((a) => a.describe().asks ?? []);
  const missing =
    asks.length > 0
      ? `missing credentials: this agent takes ${asks.length > 1 ? `${asks.slice(0, -1).join(", ")} or ${asks.at(-1)}` : asks[0]}`
      : "missing credentials";
  return {
    recognises: (request) => authenticators.some((a) => a.recognises(request)),
    authenticate(request) {
      for (const authenticator of authenticators)
        if (authenticator.recognises(request)) return authenticator.authenticate(request);
      throw new DomainError("unauthenticated", missing);
    },
    describe: () => description,
  };
}

function mergeDescriptions(parts: AuthDescription[]): AuthDescription {
  const enabled = parts.filter((p) => p.enabled);
  return {
    enabled: enabled.length > 0,
    schemes: Object.assign({}, ...enabled.map((p) => p.schemes)) as Record<string, SecurityScheme>,
    requirements: enabled.flatMap((p) => p.requirements),
    tenants: [...new Set(parts.flatMap((p) => p.tenants))],
    allTenantsHolders: parts.flatMap((p) => p.allTenantsHolders),
    summary: enabled.map((p) => p.summary).join(" + ") || parts[0]?.summary || "",
  };
}

/** The `WWW-Authenticate` header (if any) a refusal carries, from the request's headers and the error. */
export type Challenges = (headers: HeaderLookup, err: unknown) => Record<string, string>;

/**
 * The `WWW-Authenticate` header of a refusal, the same on every HTTP binding: every 401 has one (RFC 9110
 * §15.5.2), with `invalid_token` when a bearer credential was refused; a bearer caller missing a scope gets
 * `insufficient_scope` and the `scope` it lacks with its 403 (RFC 6750 §3.1). Other answers, and a 403 to a caller
 * that sent no bearer credential (a client certificate, `X-API-Key`), carry none. With `resourceMetadata` (a host
 * taking OIDC/OAuth2 tokens), both challenges name where the RFC 9728 protected-resource metadata is
 * (`resource_metadata`), as OpenWOP v2 identity.md §2.5 asks (openwop/openwop 0632b124); the challenge never
 * changes a status.
 */
export function bearerChallenges(resourceMetadata?: string): Challenges {
  const metadata = resourceMetadata !== undefined ? `, resource_metadata="${quoted(resourceMetadata)}"` : "";
  const realm = 'Bearer realm="openwop-a2a-host"';
  return (headers, err): Record<string, string> => {
    if (!(err instanceof DomainError)) return {};
    const bearer = bearerOf(headers) !== undefined;
    if (err.code === "unauthenticated" || err.code === "credential-lifetime-exceeded")
      return {
        "www-authenticate": bearer
          ? `${realm}, error="invalid_token", error_description="${quoted(err.message)}"${metadata}`
          : `${realm}${metadata}`,
      };
    if (bearer && err.code === "permission-denied" && typeof err.details?.["requiredScope"] === "string") {
      return {
        "www-authenticate": `${realm}, error="insufficient_scope", scope="${quoted(err.details["requiredScope"])}"${metadata}`,
      };
    }
    return {};
  };
}

/** The challenges of a host that serves no protected-resource metadata (API keys, client certificates). */
export const challengeHeaders: Challenges = bearerChallenges();

/** RFC 6750 §3: error_description and scope are %x20-21 / %x23-5B / %x5D-7E (no quote, no backslash). */
function quoted(value: string): string {
  return value.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, "");
}
