import { DomainError, invalidParams } from "./errors.js";

/**
 * OpenWOP v2 tenant-bound ids (spec/v2/core/identity.md §5, read at openwop/openwop eff2e2f2 and the Stable text
 * of the same file): `<tenantId>/<opaque>`. This host keeps every run under its bare v1 id (a UUID) and its
 * tenant, so the bound id is a projection, never stored: `<tenant>/<uuid>`. Nothing persisted changes.
 */
export const BOUND_ID = /^(anon:)?[A-Za-z0-9._~-]{1,128}\/[A-Za-z0-9._~-]{16,128}$/;
/** A tenant this host can put in a bound id: the tenantId grammar without `~` (a host never mints one with `~`). */
const MINTABLE_TENANT = /^[A-Za-z0-9._-]{1,128}$/;
const OPAQUE = /^[A-Za-z0-9._~-]{16,128}$/;
/** Bytes that travel unchanged in the one-segment wire form; every other byte becomes `~XX`. */
const PASSTHROUGH = /^[A-Za-z0-9._-]$/;

/** The bound id of a run this host stores as `bareId` in `tenant`; refused when the tenant cannot form one. */
export function boundIdOf(tenant: string, bareId: string): string {
  checkMintableTenant(tenant);
  return `${tenant}/${bareId}`;
}

/** Refuses a tenant name that cannot be the tenant segment of an id this host mints. */
export function checkMintableTenant(tenant: string): void {
  if (!MINTABLE_TENANT.test(tenant)) {
    throw new DomainError(
      "permission-denied",
      `the tenant name ${JSON.stringify(tenant)} cannot form an OpenWOP v2 id (letters, digits, ".", "_" and "-", at most 128); use the /v1 paths`,
    );
  }
}

/** The one-segment wire form of a bound id (`acme/r-1…` → `acme~2Fr-1…`), for links. */
export function projectBoundId(id: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(id)) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && PASSTHROUGH.test(ch) ? ch : `~${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Decodes the `~XX` wire form (the router has already decoded `%2F`); a `~` without two hex digits is refused. */
function unproject(segment: string, name: string): string {
  if (!segment.includes("~")) return segment;
  const bytes: number[] = [];
  for (let i = 0; i < segment.length; i++) {
    if (segment[i] !== "~") {
      bytes.push(...new TextEncoder().encode(segment[i]!));
      continue;
    }
    const hex = segment.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex))
      throw invalidParams(`${name}: "~" must be followed by two hex digits`, { path: name });
    bytes.push(parseInt(hex, 16));
    i += 2;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes));
  } catch {
    throw invalidParams(`${name} does not decode to UTF-8`, { path: name });
  }
}

/**
 * The stored (bare) id named by a v2 path parameter, checked against the caller's tenant before anything is read:
 * a bound id of another tenant is `id-tenant-mismatch` whether or not the run exists; a malformed one (no tenant,
 * an empty or short opaque part) is invalid. The bare form is admitted only while `bareAllowed` (the v1 overlap)
 * and then resolves under the caller's tenant.
 */
export function bareIdFor(parameter: string, callerTenant: string, bareAllowed: boolean, name = "runId"): string {
  const id = unproject(parameter, name);
  if (!id.includes("/")) {
    if (bareAllowed && OPAQUE.test(id)) return id;
    throw invalidParams(
      bareAllowed
        ? `${name} must be a tenant-bound id "<tenant>/<id>" (or the bare id a /v1 path gave out)`
        : `${name} must be a tenant-bound id "<tenant>/<id>"; bare v1 ids are no longer accepted`,
      { path: name },
    );
  }
  if (!BOUND_ID.test(id)) {
    throw invalidParams(`${name} must be "<tenant>/<id>" with a non-empty tenant and an id of 16-128 characters`, {
      path: name,
    });
  }
  const slash = id.indexOf("/");
  if (id.slice(0, slash) !== callerTenant) {
    throw new DomainError("id-tenant-mismatch", `${name} names a tenant other than the caller's`);
  }
  return id.slice(slash + 1);
}
