import type { AuthDescription } from "../auth/authenticator.js";
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
  /** `allTenants`: the tenants the authenticators know (the configured keys'; "default" with auth off). */
  constructor(private readonly allTenants: readonly string[]) {}

  static fromAuth(auth: Pick<AuthDescription, "tenants">): ConsoleAccess {
    return new ConsoleAccess(auth.tenants);
  }

  /** The tenants `principal` sees, in a stable order (a token's tenant need not be among the configured ones). */
  tenantsFor(principal: Principal): readonly string[] {
    if (!seesAllTenants(principal)) return [principal.tenant];
    return this.allTenants.includes(principal.tenant) ? this.allTenants : [...this.allTenants, principal.tenant];
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
export function consoleAccessDescription(
  auth: Pick<AuthDescription, "enabled" | "allTenantsHolders">,
  operator: { console: boolean },
): string {
  if (!operator.console) return "console: off";
  if (!auth.enabled) return "console: tenant default (auth off)";
  const wide = auth.allTenantsHolders;
  return wide.length
    ? `console: per-tenant; all tenants for keys ${wide.join(", ")} (${CONSOLE_ALL_TENANTS_SCOPE})`
    : `console: per-tenant; no key sees all tenants (${CONSOLE_ALL_TENANTS_SCOPE})`;
}
