/**
 * The one retry policy of the host (push delivery, calls to peer agents; handler retries can use it too):
 * which failures retry, exponential backoff with jitter, a cap, and a budget of attempts and age.
 *
 * Whether a failure may succeed later is said by the failure itself (`RetryHint.retryable`: a push result,
 * a PeerCallError, …), never by a flag the caller adds; a failure that does not say is not retried.
 * Pure: the clock and the random source are arguments.
 */

/** A failure (an error or a result) that knows whether the same call may succeed later. */
export interface RetryHint {
  readonly retryable: boolean;
  /** The server's `Retry-After` (ms), when it gave one: the delay before the retry is then at least this, up to the policy's maxMs. */
  readonly retryAfterMs?: number;
}

/** True only for a failure that says it may succeed later. */
export function isRetryable(failure: unknown): boolean {
  return typeof failure === "object" && failure !== null && (failure as Partial<RetryHint>).retryable === true;
}

export interface RetryPolicy {
  baseMs: number;
  maxMs: number;
  /** Failed attempts after which the call is given up. */
  maxAttempts: number;
  /** Age (since `firstAt`, e.g. when the pushed event was committed) after which a failure is not retried. */
  maxAgeMs?: number;
  /**
   * The delay is exp·(min + random·(max − min)), exp = base·2^(n−1) capped at maxMs. Default "equal jitter"
   * {min 0.5, max 1}: half fixed, half random, so callers failing together do not retry in lockstep yet the
   * delay still grows.
   */
  jitter?: { min: number; max: number };
}

export const EQUAL_JITTER = { min: 0.5, max: 1 } as const;

/** Delay before attempt `failedAttempts + 1`. */
export function backoffDelay(policy: RetryPolicy, failedAttempts: number, random: () => number = Math.random): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, Math.min(failedAttempts - 1, 40)));
  const { min, max } = policy.jitter ?? EQUAL_JITTER;
  return Math.round(exp * (min + random() * (max - min)));
}

export type GiveUpReason = "not-retryable" | "max-attempts" | "max-age";

export type RetryDecision = { retry: true; delayMs: number } | { retry: false; reason: GiveUpReason };

/**
 * What to do after a failure: give up (and why), or retry after a delay. `failedAttempts` counts this failure;
 * `firstAt` and `now` (ms) are only read when the policy has a maxAgeMs.
 */
export function decideRetry(
  policy: RetryPolicy,
  failure: unknown,
  failedAttempts: number,
  age?: { firstAt: number; now: number },
  random: () => number = Math.random,
): RetryDecision {
  const reason = giveUpReason(policy, failure, failedAttempts, age);
  if (reason) return { retry: false, reason };
  const delayMs = backoffDelay(policy, failedAttempts, random);
  const asked = (failure as Partial<RetryHint>).retryAfterMs;
  return {
    retry: true,
    delayMs: typeof asked === "number" && asked > delayMs ? Math.min(asked, policy.maxMs) : delayMs,
  };
}

/** A `Retry-After` header (delay-seconds or an HTTP date) in ms from `now`; undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** Why a failure is given up now, or undefined when it should be retried. */
export function giveUpReason(
  policy: RetryPolicy,
  failure: unknown,
  failedAttempts: number,
  age?: { firstAt: number; now: number },
): GiveUpReason | undefined {
  if (!isRetryable(failure)) return "not-retryable";
  if (failedAttempts >= policy.maxAttempts) return "max-attempts";
  if (policy.maxAgeMs !== undefined && age !== undefined && age.now - age.firstAt >= policy.maxAgeMs) return "max-age";
  return undefined;
}
