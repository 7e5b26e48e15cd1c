import { hash, timingSafeEqual } from "node:crypto";
import { DomainError } from "../domain/errors.js";
import { bearerOf, isJwtShaped, type AuthDescription, type Authenticator } from "./authenticator.js";
import { SCOPES, type Scope } from "./principal.js";

/** One configured API key. Configuration may hold the key itself or only its SHA-256. */
export interface ApiKeyEntry {
  id: string;
  tenant: string;
  scopes: Scope[];
  keySha256: Buffer;
}

/**
 * Bearer API keys (`Authorization: Bearer <key>` or `X-API-Key: <key>`), compared in constant time by digest.
 * Synchronous: the hot path pays no promise hop. In a chain it recognises every request but JWT-shaped bearers
 * (those go to the token authenticator); alone, it refuses those as unknown keys.
 */
export function apiKeyAuthenticator(entries: ApiKeyEntry[]): Authenticator {
  const tenants = [...new Set(entries.map((k) => k.tenant))];
  const allTenantsHolders = entries
    .filter((k) => k.scopes.includes("console:operate") && k.scopes.includes("console:all-tenants"))
    .map((k) => k.id);
  const description: AuthDescription = {
    enabled: true,
    schemes: {
      apiKey: {
        type: "http",
        scheme: "bearer",
        description: "An API key issued by the operator: Authorization: Bearer <key>",
      },
    },
    requirements: [{ apiKey: [] }],
    tenants,
    allTenantsHolders,
    summary: `API keys (${entries.length})`,
    asks: "an API key (Authorization: Bearer <key>)",
  };
  return {
    recognises({ headers }) {
      const bearer = bearerOf(headers);
      return bearer === undefined || !isJwtShaped(bearer);
    },
    authenticate({ headers }) {
      const key = bearerOf(headers) || headers("x-api-key")?.trim();
      if (!key) throw new DomainError("unauthenticated", "missing credentials: send Authorization: Bearer <API key>");
      const digest = sha256(key);
      let found: ApiKeyEntry | undefined;
      for (const entry of entries) if (timingSafeEqual(entry.keySha256, digest)) found = entry;
      if (!found) throw new DomainError("unauthenticated", "invalid API key");
      return { tenant: found.tenant, id: `apikey:${found.id}`, scopes: found.scopes };
    },
    describe: () => description,
  };
}

function sha256(value: string): Buffer {
  return hash("sha256", value, "buffer");
}

/**
 * Parses `API_KEYS`: a JSON array of `{id, tenant, scopes, key | keySha256}`. Throws a message that says
 * which entry is wrong, never echoing a key.
 */
export function parseApiKeys(raw: string): ApiKeyEntry[] {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new Error(`API_KEYS must be a JSON array of {"id","tenant","scopes","key" | "keySha256"}`);
  }
  if (!Array.isArray(value) || value.length === 0) throw new Error("API_KEYS must be a non-empty JSON array");
  return value.map((entry: unknown, i) => {
    const e = entry as Record<string, unknown>;
    const where = `API_KEYS[${i}]`;
    if (typeof e?.["id"] !== "string" || !e["id"]) throw new Error(`${where}.id must be a non-empty string`);
    if (typeof e["tenant"] !== "string" || !e["tenant"]) throw new Error(`${where}.tenant must be a non-empty string`);
    // Tenants are compared exactly everywhere: "*" would be one more tenant, never a wildcard. Refused so
    // that nobody configures it believing otherwise; the console's wide view is a scope of its own.
    if (e["tenant"] === "*")
      throw new Error(
        `${where}.tenant "*" is not allowed (a key belongs to one tenant; for a console over every tenant give the key the "console:all-tenants" scope)`,
      );
    const scopes = e["scopes"];
    if (!Array.isArray(scopes) || scopes.some((s) => !(SCOPES as readonly unknown[]).includes(s))) {
      throw new Error(`${where}.scopes must be an array of ${SCOPES.join(", ")}`);
    }
    let keySha256: Buffer;
    if (typeof e["keySha256"] === "string" && /^[0-9a-f]{64}$/i.test(e["keySha256"]))
      keySha256 = Buffer.from(e["keySha256"], "hex");
    else if (typeof e["key"] === "string" && e["key"].length >= 16) keySha256 = sha256(e["key"]);
    else throw new Error(`${where} needs "key" (at least 16 characters) or "keySha256" (64 hex digits)`);
    return { id: e["id"], tenant: e["tenant"], scopes: scopes as Scope[], keySha256 };
  });
}
