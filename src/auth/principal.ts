import { DomainError } from "../domain/errors.js";

/**
 * The scopes an API key can hold (OpenWOP rest-endpoints.md names, and ours: `console:operate` opens the
 * operator console on the key's own tenant; `console:all-tenants` widens it to every configured tenant).
 */
export const SCOPES = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read", "console:operate", "console:all-tenants"] as const;
export type Scope = (typeof SCOPES)[number];

/** Who is acting: recorded as decidedBy / cancelledBy, and the tenant every lookup is scoped to. */
export interface Principal {
  tenant: string;
  id: string;
  /** What this principal may do; "*" in dev mode (auth off) and for the host's own timers. */
  scopes: readonly Scope[] | "*";
}

export function requireScope(principal: Principal, scope: Scope): void {
  if (principal.scopes !== "*" && !principal.scopes.includes(scope)) {
    throw new DomainError("permission-denied", `this API key lacks the "${scope}" scope`, { requiredScope: scope });
  }
}
