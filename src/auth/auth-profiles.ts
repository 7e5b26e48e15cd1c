import { ASYMMETRIC_JWS_ALGORITHMS } from "../domain/asymmetric-algorithms.js";
import type { AuthSettings } from "./auth-settings.js";
import type { ClientCertificateEntry } from "./client-certificate-authenticator.js";

/**
 * The OpenWOP v1 auth profiles this host claims, as the v1 discovery document's `auth` carries them
 * (spec/v1/auth-profiles.md at openwop/openwop 333ad66e; the conformance scenarios auth-oidc-user-bearer @14b9e0ea,
 * auth-oauth2-client-credentials @01ad095d and auth-mtls @2e008341 read `profiles[]`, `oidc`, `oauth2`, `mtls`).
 * v2 replaces them with `auth.lanes[]` (auth-lanes.ts); the v1 document keeps them through the overlap.
 */
export interface AuthProfiles {
  profiles: string[];
  oidc?: { supported: true; issuers: string[]; audience?: string; supportedScopeMapping?: ScopeMapping };
  oauth2?: { supported: true; issuer?: string; audience?: string; supportedAlgorithms: string[] };
  mtls?: { supported: true; required: boolean; subjectMapping?: SubjectMapping };
}

type ScopeMapping = "group-claim" | "scope-claim";
type SubjectMapping = "cn" | "san-dns" | "san-uri";

/** What the port does with client certificates (TLS_CLIENT_AUTH and TLS_CLIENT_PRINCIPALS), when it speaks TLS. */
export interface ClientCertificatePolicy {
  clientAuth: "none" | "optional" | "required";
  principals: readonly ClientCertificateEntry[];
}

export const OIDC_USER_BEARER = "openwop-auth-oidc-user-bearer";
export const OAUTH2_CLIENT_CREDENTIALS = "openwop-auth-oauth2-client-credentials";
export const MTLS = "openwop-auth-mtls";

/**
 * Exactly what is configured and enforced, nothing more:
 * - OIDC issuers (AUTH_OIDC_ISSUERS) take both user tokens and OAuth2 client-credentials tokens (a machine caller:
 *   its client in `sub`, else `client_id` or `azp`), so both profiles come together: every issuer, the audience
 *   when all issuers share one, and the one scope mapping every issuer applies (`group-claim` when each maps
 *   groups to scopes: groupsClaim and groupScopes; `scope-claim` when none does; nothing when they differ).
 *   `oauth2.issuer` is a single issuer in the profile's shape, so it is named only when there is one.
 * - mTLS when a client certificate changes a decision: the port demands one (TLS_CLIENT_AUTH=required) or maps
 *   verified ones to callers (TLS_CLIENT_PRINCIPALS). `subjectMapping` only when every entry maps by exactly that
 *   (a subject of one CN, or a `DNS:` or `URI:` SAN), since the enum has no word for a mixed or fuller mapping.
 * No `introspectionIntervalSeconds`: the host introspects no token (its lane is exp-only).
 */
export function authProfiles(settings: AuthSettings, certificates: ClientCertificatePolicy | undefined): AuthProfiles {
  const result: AuthProfiles = { profiles: [] };
  const issuers = settings.mode === "on" ? (settings.oidc?.issuers ?? []) : [];
  if (issuers.length > 0) {
    const audiences = [...new Set(issuers.map((i) => i.audience))];
    const audience = audiences.length === 1 ? { audience: audiences[0]! } : {};
    const grouped = issuers.filter((i) => i.groupsClaim !== undefined && i.groupScopes !== undefined).length;
    const mapping = grouped === issuers.length ? "group-claim" : grouped === 0 ? "scope-claim" : undefined;
    result.profiles.push(OIDC_USER_BEARER, OAUTH2_CLIENT_CREDENTIALS);
    result.oidc = {
      supported: true,
      issuers: issuers.map((i) => i.issuer),
      ...audience,
      ...(mapping ? { supportedScopeMapping: mapping } : {}),
    };
    result.oauth2 = {
      supported: true,
      ...(issuers.length === 1 ? { issuer: issuers[0]!.issuer } : {}),
      ...audience,
      supportedAlgorithms: [...ASYMMETRIC_JWS_ALGORITHMS],
    };
  }
  if (certificates && (certificates.clientAuth === "required" || certificates.principals.length > 0)) {
    const mapping = subjectMappingOf(certificates.principals);
    result.profiles.push(MTLS);
    result.mtls = {
      supported: true,
      required: certificates.clientAuth === "required",
      ...(mapping ? { subjectMapping: mapping } : {}),
    };
  }
  return result;
}

function subjectMappingOf(entries: readonly ClientCertificateEntry[]): SubjectMapping | undefined {
  const kinds = new Set(
    entries.map((e): SubjectMapping | undefined => {
      if (e.san?.startsWith("DNS:")) return "san-dns";
      if (e.san?.startsWith("URI:")) return "san-uri";
      return e.subject !== undefined && /^\s*CN\s*=[^,]*$/.test(e.subject) ? "cn" : undefined;
    }),
  );
  const [only] = kinds;
  return kinds.size === 1 ? only : undefined;
}
