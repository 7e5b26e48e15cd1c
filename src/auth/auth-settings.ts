import { parseApiKeys, type ApiKeyEntry } from "./api-key-authenticator.js";
import { loadOidcSettings, type OidcSettings } from "./oidc-settings.js";

/**
 * AUTH=off (dev: every caller is the default tenant's anonymous principal) or on: API keys (`API_KEYS`),
 * OIDC bearer tokens (`AUTH_OIDC_ISSUERS` or `AUTH_OIDC_ISSUER`), or both side by side. `apikey` is the older name of `on`.
 */
export interface AuthSettings {
  mode: "off" | "on";
  keys: ApiKeyEntry[];
  oidc?: OidcSettings;
}

/**
 * Auth is on whenever `API_KEYS` or an OIDC issuer is set (or `AUTH=on`), and always in production, which
 * refuses to start without a way in: API keys, OIDC tokens, or client certificates (`TLS_CLIENT_PRINCIPALS`, whose
 * own checks live with the TLS settings; each alone is enough). Returns the problems instead of throwing so config.ts keeps one error type.
 */
export function loadAuthSettings(
  env: Record<string, string | undefined>,
  production: boolean,
): AuthSettings | string[] {
  const oidcSet = Boolean(env["AUTH_OIDC_ISSUER"] || env["AUTH_OIDC_ISSUERS"] || env["AUTH_OIDC_ISSUERS_FILE"]);
  const requested = env["AUTH"] || (env["API_KEYS"] || oidcSet || production ? "on" : "off");
  if (requested !== "off" && requested !== "on" && requested !== "apikey")
    return [`AUTH must be one of off, on (or apikey, its older name) (got "${requested}")`];
  // Checked even with AUTH=off: a half-configured issuer is a mistake to report, not to ignore.
  const oidc = loadOidcSettings(env, production);
  if (Array.isArray(oidc)) return oidc;
  if (requested === "off")
    return production ? ["NODE_ENV=production does not allow AUTH=off"] : { mode: "off", keys: [] };
  if (!env["API_KEYS"] && !oidc && !env["TLS_CLIENT_PRINCIPALS"]) {
    return [
      "AUTH=on needs API_KEYS (a JSON array of {id, tenant, scopes, key | keySha256}), AUTH_OIDC_ISSUERS or AUTH_OIDC_ISSUER (with AUTH_OIDC_AUDIENCE), or TLS_CLIENT_PRINCIPALS (with TLS)",
    ];
  }
  try {
    return { mode: "on", keys: env["API_KEYS"] ? parseApiKeys(env["API_KEYS"]) : [], ...(oidc ? { oidc } : {}) };
  } catch (err) {
    return [(err as Error).message];
  }
}
