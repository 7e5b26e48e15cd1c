import { rateLimited } from "./errors.js";
import { limitsFor, type TenantLimits } from "./tenant-limits.js";

/** One token bucket: `rate` tokens a second, holding at most `burst`. */
interface Bucket {
  tokens: number;
  at: number;
}

/**
 * TENANT_LIMITS' `requestsPerSecond` and `burst`, on this instance: a token bucket per tenant, and one per API key
 * or client that has an entry of its own under `keys`. A request takes a token from each bucket it falls in, or
 * from none: a refusal (`rate-limited`, with the seconds until a token is there) takes nothing. `burst` defaults
 * to `requestsPerSecond` (at least 1).
 */
export class RequestRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly settings: TenantLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether any limit is set at all: without one the host skips the check. */
  get active(): boolean {
    const all = [this.settings.default, ...Object.values(this.settings.tenants), ...Object.values(this.settings.keys)];
    return all.some((limits) => limits.requestsPerSecond !== undefined);
  }

  /** Admits one request of `tenant` (with `keyId`, the key or client it came with), or throws `rate-limited`. */
  admit(tenant: string, keyId?: string): void {
    const scopes: [string, ReturnType<typeof limitsFor>][] = [[`t:${tenant}`, limitsFor(this.settings, tenant)]];
    if (keyId !== undefined && Object.hasOwn(this.settings.keys, keyId))
      scopes.push([`k:${keyId}`, limitsFor(this.settings, tenant, keyId)]);
    const now = this.now();
    const taken: Bucket[] = [];
    for (const [name, limits] of scopes) {
      const rate = limits.requestsPerSecond;
      if (rate === undefined) continue;
      if (rate === 0) throw rateLimited("requestsPerSecond", 0, 60);
      const burst = Math.max(1, limits.burst ?? rate);
      let bucket = this.buckets.get(name);
      if (!bucket) {
        bucket = { tokens: burst, at: now };
        this.buckets.set(name, bucket);
      }
      bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * rate);
      bucket.at = now;
      if (bucket.tokens < 1) throw rateLimited("requestsPerSecond", rate, (1 - bucket.tokens) / rate);
      taken.push(bucket);
    }
    for (const bucket of taken) bucket.tokens -= 1;
  }
}

/** The key id or client in a principal id (`apikey:<id>`, `oidc:<sub>`, `mtls:<subject>`): what `keys` entries name. */
export function credentialName(principalId: string): string {
  const colon = principalId.indexOf(":");
  return colon < 0 ? principalId : principalId.slice(colon + 1);
}
