import { parseApiKeys, type ApiKeyEntry } from "./api-key-authenticator.js";

/** AUTH=off (dev: every caller is the default tenant's anonymous principal) or apikey (bearer API keys). */
export interface AuthSettings {
  mode: "off" | "apikey";
  keys: ApiKeyEntry[];
}

/**
 * API keys are on whenever `API_KEYS` is set (or `AUTH=apikey`), and always in production, which refuses
 * to start without keys. Returns an error message instead of throwing so config.ts keeps one error type.
 */
export function loadAuthSettings(env: Record<string, string | undefined>, production: boolean): AuthSettings | string {
  const mode = env["AUTH"] || (env["API_KEYS"] || production ? "apikey" : "off");
  if (mode !== "off" && mode !== "apikey") return `AUTH must be one of off, apikey (got "${mode}")`;
  if (mode === "off") return production ? "NODE_ENV=production does not allow AUTH=off" : { mode, keys: [] };
  if (!env["API_KEYS"]) return "AUTH=apikey needs API_KEYS (a JSON array of {id, tenant, scopes, key | keySha256})";
  try {
    return { mode, keys: parseApiKeys(env["API_KEYS"]) };
  } catch (err) {
    return (err as Error).message;
  }
}
