import type { Principal } from "../auth/principal.js";
import { DuplicateIdempotencyKeyError, DuplicateTaskError, type TaskStore } from "../store/task-store.js";
import type { IdempotencySeed } from "./message-idempotency.js";

/**
 * The engine's ports for admission (tenant limits and overload shedding live in src/limits/, which implements
 * them; core.ts wires them in). Only what creates something new is admitted here: replies, cancels, reads,
 * approvals and steering pass.
 */
export interface CreationGate {
  /**
   * Before a creation writes anything: throws the refusal (DomainError `rate-limited`, or `unavailable` while the
   * instance sheds new tasks), or answers what to call once the create is written or has failed.
   */
  admit(principal: Principal): Promise<() => void>;
}

/** Before a stream opens: throws the refusal, or answers what to call when the stream ends. */
export interface StreamGate {
  open(principal: Principal): () => void;
}

/**
 * A creation admitted by `gate`. A refused create that repeats one already stored (the same idempotency key, or
 * the same task id: a retry after a lost answer) is no new task: it is answered as the duplicate it is, so its
 * caller gets the task it created instead of a refusal it could never get past.
 */
export async function admitCreation(
  gate: CreationGate,
  store: TaskStore,
  args: { principal: Principal; taskId?: string; idempotency?: IdempotencySeed },
): Promise<() => void> {
  try {
    return await gate.admit(args.principal);
  } catch (err) {
    const key = args.idempotency?.key;
    if (key !== undefined && (await store.findByIdempotencyKey(key).catch(() => null)))
      throw new DuplicateIdempotencyKeyError(key);
    if (args.taskId !== undefined && (await store.get(args.taskId).catch(() => null)))
      throw new DuplicateTaskError(args.taskId);
    throw err;
  }
}
