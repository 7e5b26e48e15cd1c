import type { JWTPayload } from "jose";

/**
 * Why a verified token's lifetime is refused, or undefined when it is accepted. Access tokens expire (RFC 9068 §2.2:
 * `exp` and `iat` are required), and no longer than the issuer's maximum: neither as issued (`exp − iat`) nor
 * from now (`exp − now`, which also catches a token whose `iat` was backdated). `nbf` and `exp` themselves are
 * jose's to check; this adds what jose does not require. `tolerance` absorbs clock skew, as for `exp`.
 */
export function tokenLifetimeProblem(
  payload: JWTPayload,
  maxSeconds: number,
  now: number,
  tolerance: number,
): string | undefined {
  const { exp, iat } = payload;
  if (typeof exp !== "number") return 'no "exp" claim: a token that never expires is refused';
  if (typeof iat !== "number")
    return `no "iat" claim, while the issuer's maximum token lifetime (${maxSeconds} s) is set`;
  if (iat > now + tolerance) return `"iat" is ${iat - now} s in the future`;
  if (exp - iat > maxSeconds)
    return `issued for ${exp - iat} s (exp − iat), more than the issuer's maximum of ${maxSeconds} s`;
  if (exp - now > maxSeconds + tolerance)
    return `expires in ${exp - now} s, more than the issuer's maximum of ${maxSeconds} s`;
  return undefined;
}
