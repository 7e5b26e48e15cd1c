import { DomainError } from "../domain/errors.js";
import type { BoundLimit } from "./limit-resolution.js";
import type { LimitName } from "./limit-settings.js";

/** What a refusal is counted under: a limit, or the instance shedding new tasks. */
export type RefusalReason = LimitName | "overload";
export const REFUSAL_REASONS: readonly RefusalReason[] = [
  "requestsPerSecond",
  "tasksPerMinute",
  "runningTasks",
  "streams",
  "pushConfigsPerTask",
  "overload",
];

/**
 * How long a count limit's refusal asks the caller to wait: a task ending or a stream closing cannot be foreseen,
 * so a short fixed time; a limit of 0 or a full task's push configs will not pass by waiting, so a long one.
 */
export const COUNT_RETRY_SECONDS = 2;
export const NEVER_RETRY_SECONDS = 60;
/** Retry-After of a creation shed under overload. */
export const OVERLOAD_RETRY_SECONDS = 2;

const NOTHING: Record<LimitName, string> = {
  requestsPerSecond: "may make no requests",
  burst: "may make no requests",
  tasksPerMinute: "may create no tasks",
  runningTasks: "may run no tasks",
  streams: "may open no streams",
  pushConfigsPerTask: "may register no push notification configs",
};

/**
 * A limit's refusal: `rate-limited` (429, RESOURCE_EXHAUSTED, rate_limited), its message naming who, which limit
 * and by how much, its details the same as data (`limit`, `tenant`, `allowed`, `retryAfterSeconds`, and the key
 * when the key's own entry set it). `over` says what was over the limit, in the caller's words.
 */
export function limitRefusal(
  name: LimitName,
  bound: BoundLimit,
  tenant: string,
  over: string,
  retryAfterSeconds: number,
): DomainError {
  const zero = bound.value === 0;
  const where = bound.source === "default" ? " (the default limit)" : "";
  const message = zero
    ? `${bound.who} ${NOTHING[name]}: its ${name} limit is 0${where}`
    : `${over}: the ${name} limit of ${bound.who} is ${bound.value}${where}; retry after ${retryAfterSeconds} s`;
  const retry = zero ? NEVER_RETRY_SECONDS : retryAfterSeconds;
  return new DomainError("rate-limited", message, {
    limit: name,
    tenant,
    allowed: bound.value,
    ...(bound.source === "key" ? { key: bound.bucket.slice("key:".length) } : {}),
    retryAfterSeconds: retry,
  });
}

/** New tasks shed while the instance is overloaded: 503 + Retry-After (UNAVAILABLE), the reason in words. */
export function overloadRefusal(reason: string): DomainError {
  return new DomainError(
    "unavailable",
    `this instance is shedding new tasks (${reason}); retry after ${OVERLOAD_RETRY_SECONDS} s. Replies to waiting tasks, cancels, reads and approvals are still served`,
    // Retryable, as every `unavailable` answer says (store-call-budget.ts): the caller retries after the pause.
    { reason: "overloaded", retryable: true, retryAfterSeconds: OVERLOAD_RETRY_SECONDS },
  );
}
