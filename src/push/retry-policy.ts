/**
 * The one retry policy of push delivery: exponential backoff with jitter, capped, and a budget of
 * attempts and age after which the push goes to the dead letters.
 */
export interface RetryPolicy {
  baseMs: number;
  maxMs: number;
  maxAttempts: number;
  /** Age of the event (since it was committed) after which a failed push is not retried. */
  maxAgeMs: number;
}

/**
 * Delay before attempt `failedAttempts + 1`: base·2^(n-1) capped at max, with "equal jitter" (half fixed,
 * half random) so many webhooks failing together do not retry in lockstep, yet the delay still grows.
 */
export function backoffDelay(policy: RetryPolicy, failedAttempts: number, random: () => number = Math.random): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, Math.min(failedAttempts - 1, 40)));
  return Math.round(exp / 2 + random() * (exp / 2));
}

/** Why a failed push is given up now, or undefined when it should be retried. */
export function giveUpReason(policy: RetryPolicy, failedAttempts: number, eventAt: string, now: number, retryable: boolean): "not-retryable" | "max-attempts" | "max-age" | undefined {
  if (!retryable) return "not-retryable";
  if (failedAttempts >= policy.maxAttempts) return "max-attempts";
  if (now - Date.parse(eventAt) >= policy.maxAgeMs) return "max-age";
  return undefined;
}
