import { DomainError } from "../domain/errors.js";

/**
 * The scopes an API key can hold (OpenWOP rest-endpoints.md names, and ours: `console:operate` opens the
 * operator console on the key's own tenant; `console:all-tenants` widens it to every configured tenant).
 */
export const SCOPES = [
  "runs:create",
  "runs:read",
  "runs:cancel",
  "approvals:respond",
  "webhooks:manage",
  "manifest:read",
  "console:operate",
  "console:all-tenants",
] as const;
export type Scope = (typeof SCOPES)[number];

/** Who is acting: recorded as decidedBy / cancelledBy, and the tenant every lookup is scoped to. */
export interface Principal {
  tenant: string;
  id: string;
  /** What this principal may do; "*" in dev mode (auth off) and for the host's own timers. */
  scopes: readonly Scope[] | "*";
  /** The OAuth client an access token was issued to (`client_id`, else `azp`): TENANT_LIMITS' `keys` name it. */
  clientId?: string;
}

/**
 * The credential a principal came from, in the caller's words, by its id's prefix: every authenticator writes
 * its kind there (`apikey:<key id>`, `oidc:<sub>` or `oidc:client:<client_id>`, `mtls:<subject or SAN>`), and those ids are what decisions
 * are recorded under, so the prefix is already the one record of the kind.
 */
const CREDENTIALS = new Map<string, (name: string) => string>([
  ["apikey", (name) => `the API key "${name}"`],
  ["oidc", (name) => `the access token of "${name}"`],
  ["mtls", (name) => `the client certificate "${name}"`],
]);

/** The credential `principal` presented, named for a message to that caller ("the API key \"ops\"", "the access token of \"user-1\""). */
export function credentialOf(principal: Principal): string {
  const colon = principal.id.indexOf(":");
  const named = colon > 0 ? CREDENTIALS.get(principal.id.slice(0, colon)) : undefined;
  return named ? named(principal.id.slice(colon + 1)) : `the caller "${principal.id}"`;
}

export function requireScope(principal: Principal, scope: Scope): void {
  if (principal.scopes !== "*" && !principal.scopes.includes(scope)) {
    throw new DomainError("permission-denied", `${credentialOf(principal)} lacks the "${scope}" scope`, {
      requiredScope: scope,
    });
  }
}
