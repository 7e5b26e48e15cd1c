import type { AuthSettings } from "../auth/auth-settings.js";
import type { Principal } from "../auth/principal.js";

/** Opens the operator console (/console/api/*): the key's own tenant only. */
export const CONSOLE_SCOPE = "console:operate";
/** Widens `console:operate` to every configured tenant. Grants nothing outside /console/api. */
export const CONSOLE_ALL_TENANTS_SCOPE = "console:all-tenants";

/**
 * Which tenants a console caller sees and acts in: its own (like every other surface), or every tenant of
 * the configured API keys when the key holds `console:all-tenants` as well as `console:operate`. Only an
 * explicit scope counts: the dev principal (auth off, scopes "*") stays in the "default" tenant, as today.
 */
export class ConsoleAccess {
  /** `allTenants`: the tenants of the configured keys ("default" with auth off). */
  constructor(private readonly allTenants: readonly string[]) {}

  static fromAuth(auth: AuthSettings): ConsoleAccess {
    return new ConsoleAccess(auth.mode === "apikey" ? [...new Set(auth.keys.map((k) => k.tenant))] : ["default"]);
  }

  /** The tenants `principal` sees, in a stable order. */
  tenantsFor(principal: Principal): readonly string[] {
    return seesAllTenants(principal) ? this.allTenants : [principal.tenant];
  }

  canSee(principal: Principal, tenant: string): boolean {
    return this.tenantsFor(principal).includes(tenant);
  }
}

export function seesAllTenants(principal: Principal): boolean {
  return principal.scopes !== "*" && principal.scopes.includes(CONSOLE_ALL_TENANTS_SCOPE);
}

/**
 * The start-up phrase of the console's access rule, e.g.
 * "console: per-tenant; all tenants for keys ops-1 (console:all-tenants)".
 */
export function consoleAccessDescription(config: { auth: AuthSettings; operator: { console: boolean } }): string {
  if (!config.operator.console) return "console: off";
  if (config.auth.mode !== "apikey") return "console: tenant default (auth off)";
  const wide = config.auth.keys
    .filter((k) => k.scopes.includes(CONSOLE_SCOPE) && k.scopes.includes(CONSOLE_ALL_TENANTS_SCOPE))
    .map((k) => k.id);
  return wide.length
    ? `console: per-tenant; all tenants for keys ${wide.join(", ")} (${CONSOLE_ALL_TENANTS_SCOPE})`
    : `console: per-tenant; no key sees all tenants (${CONSOLE_ALL_TENANTS_SCOPE})`;
}
