import { AsyncLocalStorage } from "node:async_hooks";
import {
  MongoError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from "mongodb";
import { DomainError } from "../domain/errors.js";

/**
 * How long a request may wait for the store: the caller's deadline (gRPC `grpc-timeout`, Connect
 * `connect-timeout-ms`; none on JSON-RPC and HTTP+JSON) and the server's cap per store operation
 * (STORE_TIMEOUT_MS), whichever comes first.
 */
export interface StoreCallBudget {
  /** The caller's deadline, epoch milliseconds. */
  deadline?: number | undefined;
  /** The longest one store operation may take. */
  capMs: number;
}

/** STORE_TIMEOUT_MS when not configured. */
export const DEFAULT_STORE_TIMEOUT_MS = 10_000;

/** Node's timers hold at most 2^31-1 ms; a longer delay fires at once (with a TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The `timeoutMS` (MongoDB CSOT) of the read a store issues right now on a request's behalf; set only around
 * the store call itself (`withinStoreBudget(..., { cancel: true })`), so work the request merely started
 * (the engine, shared commit fan-outs) never inherits a caller's deadline.
 */
const operationTimeout = new AsyncLocalStorage<number>();

/** The `timeoutMS` option for a read issued now: `{}` outside a request's store call. */
export function readTimeout(): { timeoutMS?: number } {
  const ms = operationTimeout.getStore();
  return ms === undefined ? {} : { timeoutMS: ms };
}

/**
 * Runs one store operation within `budget`. A read (`cancel: true`) is cancelled by the driver itself at the
 * budget (its `timeoutMS`); every operation is also raced against it, so the caller is answered at the
 * deadline even where the driver has no cancellation (a write queued for its group commit). A write the
 * caller stopped waiting for may still commit: that is why the answer is DEADLINE_EXCEEDED or UNAVAILABLE
 * (retryable), and why every create is idempotent (message ids, Idempotency-Key), so a retry finds the task
 * the first attempt made instead of making a second.
 *
 * Errors that mean the store cannot be reached or did not answer in time become `deadline-exceeded` (the
 * caller's deadline passed) or `unavailable` (retryable); every other error passes through unchanged.
 */
export async function withinStoreBudget<T>(
  budget: StoreCallBudget,
  op: () => Promise<T>,
  options: { cancel?: boolean } = {},
): Promise<T> {
  const limitMs = budgetMs(budget);
  if (limitMs <= 0) throw deadlineExceeded();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(exhausted(budget)), limitMs);
  });
  try {
    const running = options.cancel ? operationTimeout.run(limitMs, op) : op();
    return await Promise.race([running, expired]);
  } catch (err) {
    throw storeCallError(err, budget);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A service's store calls on a caller's behalf (A2A, the runs API), each bounded by the caller's deadline and the
 * cap per operation (STORE_TIMEOUT_MS).
 */
export class CallerStoreCalls {
  constructor(private readonly capMs = DEFAULT_STORE_TIMEOUT_MS) {}

  /** A read within the caller's budget: the driver cancels it there (MongoDB timeoutMS). */
  read<T>(caller: { deadline?: number | undefined }, op: () => Promise<T>): Promise<T> {
    return withinStoreBudget({ deadline: caller.deadline, capMs: this.capMs }, op, { cancel: true });
  }

  /**
   * A store call the caller waits for within its budget without cancelling it: a write or a supervisor step (run
   * outside the caller's deadline: the engine must not inherit it), a push-config call. A write may still commit
   * after the caller was answered DEADLINE_EXCEEDED or UNAVAILABLE; a retry finds it by its idempotency key.
   */
  bounded<T>(caller: { deadline?: number | undefined }, op: () => Promise<T>): Promise<T> {
    return withinStoreBudget({ deadline: caller.deadline, capMs: this.capMs }, op);
  }
}

/** Milliseconds left of a budget (≤ 0 when the caller's deadline has passed), at most the cap and the timer limit. */
export function budgetMs(budget: StoreCallBudget): number {
  const cap = Math.min(budget.capMs, MAX_TIMER_MS);
  return budget.deadline === undefined ? cap : Math.min(cap, Math.ceil(budget.deadline - Date.now()));
}

/** A store error as the caller should read it: unavailable or deadline-exceeded for a store out of reach, else itself. */
export function storeCallError(err: unknown, budget?: StoreCallBudget): unknown {
  if (err instanceof DomainError || !isStoreUnavailable(err)) return err;
  if (budget?.deadline !== undefined && budget.deadline <= Date.now()) return deadlineExceeded(err);
  return storeUnavailable(
    err instanceof MongoOperationTimeoutError
      ? "the task store did not answer in time"
      : "the task store cannot be reached",
    err,
  );
}

/** An answer after which the write may still have happened (or happen): keep what a retry needs to find it. */
export function isUnknownStoreOutcome(err: unknown): boolean {
  return err instanceof DomainError && (err.code === "unavailable" || err.code === "deadline-exceeded");
}

/**
 * Driver errors that mean "the store is down, unreachable or stalled" (the request may succeed when retried),
 * not a bug: no server selectable, a network error or timeout (a cleared pool's error is one), an operation
 * past its timeoutMS, a closed topology, and server errors MongoDB itself labels transient.
 */
export function isStoreUnavailable(err: unknown, depth = 0): boolean {
  if (
    err instanceof MongoServerSelectionError ||
    err instanceof MongoNetworkError ||
    err instanceof MongoOperationTimeoutError
  )
    return true;
  // The driver lets a few socket errors through unwrapped (a write after the server ended the connection is a
  // bare EPIPE from net.Socket); from a store call they mean the same as a MongoNetworkError.
  if (
    err instanceof Error &&
    !(err instanceof MongoError) &&
    SOCKET_ERROR_CODES.has((err as NodeJS.ErrnoException).code ?? "")
  )
    return true;
  // A client bulkWrite wraps the server's error (a NotWritablePrimary, say) as its cause.
  if (
    err instanceof Error &&
    err.name === "MongoClientBulkWriteError" &&
    depth < 2 &&
    isStoreUnavailable(err.cause, depth + 1)
  )
    return true;
  if (
    err instanceof MongoNotConnectedError ||
    err instanceof MongoTopologyClosedError ||
    err instanceof MongoServerClosedError
  )
    return true;
  if (!(err instanceof MongoError)) return false;
  if (err.name === "MongoPoolClearedError" || err.name === "MongoWaitQueueTimeoutError") return true;
  if (err.hasErrorLabel("RetryableWriteError") || err.hasErrorLabel("SystemOverloadedError")) return true;
  return typeof err.code === "number" && TRANSIENT_SERVER_CODES.has(err.code);
}

/** Node's codes for a store connection that broke, was refused or timed out. */
const SOCKET_ERROR_CODES: ReadonlySet<string> = new Set([
  "EPIPE",
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "ERR_STREAM_WRITE_AFTER_END",
  "ERR_SOCKET_CLOSED",
]);

/**
 * Server codes of a node that cannot serve now (stepping down, shutting down, unreachable peers, MaxTimeMSExpired
 * of an operation past its timeoutMS).
 */
const TRANSIENT_SERVER_CODES = new Set([6, 7, 50, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);

function storeUnavailable(message: string, cause: unknown): DomainError {
  return new DomainError(
    "unavailable",
    `${message}; the request may succeed if retried`,
    { retryable: true },
    { cause },
  );
}

function deadlineExceeded(cause?: unknown): DomainError {
  return new DomainError(
    "deadline-exceeded",
    "the request's deadline passed before the task store answered; the request may succeed if retried",
    { retryable: true },
    cause === undefined ? undefined : { cause },
  );
}

function exhausted(budget: StoreCallBudget): DomainError {
  if (budget.deadline !== undefined && budget.deadline <= Date.now() + 1) return deadlineExceeded();
  const message = `the task store did not answer within ${budget.capMs} ms`;
  return storeUnavailable(message, new Error(`${message} (STORE_TIMEOUT_MS)`));
}
