import type { AuthSettings } from "./auth-settings.js";
import { SCOPES } from "./principal.js";

/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) of a host that takes OIDC/OAuth2 access tokens: OpenWOP v2
 * identity.md §2.5 (openwop/openwop 0632b124) asks every host with an `oidc` or `oauth2` lane to serve it,
 * unauthenticated, at the well-known URI formed from the resource identifier (the base URL the API is served
 * under: `https://h.example/api` → `https://h.example/.well-known/oauth-protected-resource/api`), and to name it in
 * its challenges. `resource` is that identifier; `authorization_servers` exactly the configured issuers;
 * `scopes_supported` the scopes the host enforces. No sender-constraint member: every lane's floor is `bearer`.
 */
export interface ProtectedResource {
  /** Where the metadata is, as challenges name it. */
  url: string;
  /** The path this host serves it at (the well-known prefix, then the public URL's path, if any). */
  path: string;
  document: Record<string, unknown>;
}

const WELL_KNOWN = "/.well-known/oauth-protected-resource";

/** Undefined when no issuer is configured (no oidc lane: nothing to describe, and the challenges stay plain). */
export function protectedResource(settings: AuthSettings, publicUrl: string): ProtectedResource | undefined {
  const issuers = settings.mode === "on" ? (settings.oidc?.issuers ?? []) : [];
  if (issuers.length === 0) return undefined;
  const base = new URL(publicUrl);
  const suffix = base.pathname.replace(/\/+$/, "");
  const resource = `${base.origin}${suffix}`;
  const path = `${WELL_KNOWN}${suffix}`;
  return {
    url: `${base.origin}${path}`,
    path,
    document: {
      resource,
      authorization_servers: issuers.map((i) => i.issuer),
      scopes_supported: [...SCOPES],
      bearer_methods_supported: ["header"],
      resource_name: "openwop-a2a-host",
    },
  };
}
