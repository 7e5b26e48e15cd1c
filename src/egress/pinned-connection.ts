import type { LookupAddress, LookupOptions } from "node:dns";
import type { LookupFunction } from "node:net";
import type { ResolvedAddress } from "./egress-guard.js";

/**
 * Pieces the guarded outbound clients share (the egress HTTP client, the gRPC peer client's HTTP/2 sessions): the
 * socket is pinned to the addresses the egress guard checked, so nothing resolves the name a second time.
 */

/** A socket lookup that only ever answers with the pre-validated addresses. */
export function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname: string, options: LookupOptions, callback) => {
    const family =
      options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
    const usable = family === 0 ? addresses : addresses.filter((a) => a.family === family);
    const first = usable[0];
    if (first === undefined) {
      const err: NodeJS.ErrnoException = new Error("no validated address of the requested family");
      err.code = "ENOTFOUND";
      callback(err, "", 0);
      return;
    }
    if (options.all === true)
      callback(
        null,
        usable.map((a): LookupAddress => ({ address: a.address, family: a.family })),
      );
    else callback(null, first.address, first.family);
  };
}

/** A system error code fit for logs and results (never the error's message, which may quote a URL). */
export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[A-Z0-9_]{1,64}$/.test(code) ? code : undefined;
}

/** True when a Connection header asks to switch protocols, which guarded clients refuse. */
export function hasUpgradeToken(value: string | string[] | undefined): boolean {
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.some((v) => v.split(",").some((t) => t.trim().toLowerCase() === "upgrade"));
}
