import type { AuthSettings } from "./auth-settings.js";
import { CLOCK_TOLERANCE_SECONDS } from "./oidc-authenticator.js";

/**
 * One member of OpenWOP v2's `auth.lanes[]` (spec/v2/core/identity.md §2, Stable text; facet
 * spec/v2/facets/auth.schema.json at openwop/openwop b675e604).
 */
export interface AuthLane {
  lane: "api-key" | "oidc" | "mtls";
  issuers: string[];
  revocation: "next-request" | "exp-only";
  revocationWindowSeconds?: number;
  minimumAssurance: "bearer";
}

/**
 * The lanes this host enforces, from its settings, and nothing else:
 * - `api-key` (API_KEYS): the key realm `urn:<host>:api-key`; a key taken out of API_KEYS is refused on the first
 *   request after the host reads its configuration again (`next-request`); bearer assurance.
 * - `oidc`, one member per issuer (AUTH_OIDC_ISSUERS): no introspection, so `exp-only`, whose both bounds the
 *   token check enforces (`exp − iat` and `exp − now`, a token without `iat` refused with
 *   credential_lifetime_exceeded); the window is the issuer's maximum plus the clock tolerance the check allows.
 * - `mtls` is not advertised although client certificates are accepted (TLS_CLIENT_PRINCIPALS): the host checks
 *   no CRL or OCSP and bounds no certificate lifetime, so it has none of the lane's revocation rules to name.
 */
export function authLanes(settings: AuthSettings, publicUrl: string): AuthLane[] {
  const lanes: AuthLane[] = [];
  if (settings.keys.length > 0) {
    lanes.push({
      lane: "api-key",
      issuers: [apiKeyRealm(publicUrl)],
      revocation: "next-request",
      minimumAssurance: "bearer",
    });
  }
  for (const issuer of settings.oidc?.issuers ?? []) {
    lanes.push({
      lane: "oidc",
      issuers: [issuer.issuer],
      revocation: "exp-only",
      revocationWindowSeconds: issuer.maxTokenLifetimeSeconds + CLOCK_TOLERANCE_SECONDS,
      minimumAssurance: "bearer",
    });
  }
  return lanes;
}

/** The api-key lane's trust root: `urn:<host>:api-key`, the host being PUBLIC_URL's host name. */
export function apiKeyRealm(publicUrl: string): string {
  return `urn:${new URL(publicUrl).hostname}:api-key`;
}
