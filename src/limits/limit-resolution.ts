import type { Principal } from "../auth/principal.js";
import { LIMIT_NAMES, type LimitEntry, type LimitName, type TenantLimitSettings } from "./limit-settings.js";

/** Where a limit that binds a caller came from: its key's (or client's) entry, its tenant's, or the default. */
export type LimitSource = "key" | "tenant" | "default";

/** One limit as it binds one caller. */
export interface BoundLimit {
  value: number;
  source: LimitSource;
  /**
   * What is counted against it: `key:<id>` when the key's entry set it (the key has its own allowance), else
   * `tenant:<tenant>` (every key of the tenant shares it, whichever entry set the number).
   */
  bucket: string;
  /** The caller as a refusal names it: `tenant "acme"`, `the API key "ops"`, `the OAuth client "ci"`. */
  who: string;
}

export type BoundLimits = Partial<Record<LimitName, BoundLimit>>;

/** Callers whose resolved limits are kept; past it the cache starts over (principals are few: keys and clients). */
const MAX_CACHED = 10_000;

/**
 * Which limits bind a caller: for each limit, the most specific entry that names it (the key's or OAuth client's,
 * then the tenant's, then the default); `null` there means none. Resolved once per caller and kept.
 */
export class LimitResolution {
  private readonly cache = new Map<string, BoundLimits>();

  constructor(readonly settings: TenantLimitSettings) {}

  /** The limits that bind `principal` (absent = unlimited). */
  of(principal: Principal): BoundLimits {
    const cacheKey = `${principal.tenant}\u0000${principal.id}\u0000${principal.clientId ?? ""}`;
    let bound = this.cache.get(cacheKey);
    if (!bound) {
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(cacheKey, (bound = this.resolve(principal)));
    }
    return bound;
  }

  /** The limits a tenant's callers meet without an entry of their own key (the console's and the metrics' view). */
  ofTenant(tenant: string): BoundLimits {
    return this.resolve({ tenant, id: "", scopes: [] });
  }

  /** Tenants an entry names (their series and console rows are kept from the start). */
  namedTenants(): string[] {
    return Object.keys(this.settings.tenants);
  }

  private resolve(principal: Principal): BoundLimits {
    const { settings } = this;
    const key = keyIdOf(principal);
    const keyEntry: LimitEntry | undefined = key ? settings.keys[key.id] : undefined;
    const tenantEntry: LimitEntry | undefined = settings.tenants[principal.tenant];
    const bound: BoundLimits = {};
    for (const name of LIMIT_NAMES) {
      let value: number | null | undefined;
      let source: LimitSource;
      if (keyEntry && keyEntry[name] !== undefined) [value, source] = [keyEntry[name], "key"];
      else if (tenantEntry && tenantEntry[name] !== undefined) [value, source] = [tenantEntry[name], "tenant"];
      else [value, source] = [settings.default[name], "default"];
      if (value === null || value === undefined) continue;
      const byKey = source === "key" && key !== undefined;
      bound[name] = {
        value,
        source,
        bucket: byKey ? `key:${key.id}` : `tenant:${principal.tenant}`,
        who: byKey ? `the ${key.kind} "${key.id}"` : `tenant "${principal.tenant}"`,
      };
    }
    return bound;
  }
}

/** The id a `keys` entry is looked up by: an API key's id, or the OAuth client a token was issued to. */
function keyIdOf(principal: Principal): { id: string; kind: string } | undefined {
  if (principal.id.startsWith("apikey:")) return { id: principal.id.slice("apikey:".length), kind: "API key" };
  if (principal.clientId) return { id: principal.clientId, kind: "OAuth client" };
  return undefined;
}
