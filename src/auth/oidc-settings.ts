/** OIDC bearer tokens in: whose tokens we take, for which audience, and where tenant and scopes are read. */
export interface OidcSettings {
  /** AUTH_OIDC_ISSUER: the `iss` tokens must carry; discovery is `{issuer}/.well-known/openid-configuration`. */
  issuer: string;
  /** AUTH_OIDC_AUDIENCE: the `aud` tokens must carry (this host's identifier at the identity provider). */
  audience: string;
  /** AUTH_TENANT_CLAIM: the claim naming the caller's tenant (default `tenant`). */
  tenantClaim: string;
  /** AUTH_SCOPE_CLAIM: the claim holding scopes, space-separated or an array (default `scope`; `scp` is read too). */
  scopeClaim: string;
  /** AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: an http:// loopback issuer (tests only; refused in production). */
  allowInsecure: boolean;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Undefined without AUTH_OIDC_ISSUER; a message when the settings are wrong. */
export function loadOidcSettings(env: Record<string, string | undefined>, production: boolean): OidcSettings | undefined | string {
  const raw = env["AUTH_OIDC_ISSUER"];
  const allowInsecure = env["AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS"] === "true";
  if (allowInsecure && production) return "AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS is test-only and is refused when NODE_ENV=production";
  if (!raw) return env["AUTH_OIDC_AUDIENCE"] ? "AUTH_OIDC_AUDIENCE needs AUTH_OIDC_ISSUER" : undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `AUTH_OIDC_ISSUER must be an https:// URL (got "${raw}")`;
  }
  const insecureOk = allowInsecure && url.protocol === "http:" && LOOPBACK.has(url.hostname);
  if (url.protocol !== "https:" && !insecureOk) return `AUTH_OIDC_ISSUER must be an https:// URL (http:// only on loopback with AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS=true)`;
  const audience = env["AUTH_OIDC_AUDIENCE"];
  if (!audience) return "AUTH_OIDC_ISSUER needs AUTH_OIDC_AUDIENCE (the audience this host's tokens are issued for)";
  return {
    // Compared exactly with `iss`: kept as written, only a trailing slash of discovery's base is dropped later.
    issuer: raw,
    audience,
    tenantClaim: env["AUTH_TENANT_CLAIM"] || "tenant",
    scopeClaim: env["AUTH_SCOPE_CLAIM"] || "scope",
    allowInsecure,
  };
}
