import type { Principal } from "../auth/principal.js";
import { credentialName, RequestRateLimiter } from "../domain/request-rate-limiter.js";
import type { TenantLimits } from "../domain/tenant-limits.js";

/** The dispatch's `admit` step for TENANT_LIMITS' request rate; nothing at all when no rate is set. */
export function requestRateAdmission(limits: TenantLimits): { admit?: (principal: Principal) => void } {
  const limiter = new RequestRateLimiter(limits);
  if (!limiter.active) return {};
  return { admit: (principal) => limiter.admit(principal.tenant, credentialName(principal.id)) };
}
