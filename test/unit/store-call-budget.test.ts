// Which store failures a caller reads as "retry" (unavailable / deadline-exceeded) and which stay bugs, and how a
// caller's deadline header is kept within Node's timers.
import {
  MongoClientBulkWriteError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from "mongodb";
import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import {
  budgetMs,
  isStoreUnavailable,
  isUnknownStoreOutcome,
  MAX_TIMER_MS,
  readTimeout,
  storeCallError,
  withinStoreBudget,
} from "../../src/store/store-call-budget.js";
import { clampDeadlineHeaders } from "../../src/transport/connect/rpc-deadline.js";

describe("store failures", () => {
  it("driver errors meaning the store is out of reach are unavailable; bugs and refusals are not", () => {
    const serverError = (code: number) => new MongoServerError({ message: `code ${code}`, code });
    for (const err of [
      new MongoServerSelectionError("no server", { servers: new Map() } as never),
      new MongoNetworkError("reset"),
      new MongoNetworkTimeoutError("timed out"),
      new MongoOperationTimeoutError("timeoutMS"),
      new MongoTopologyClosedError(),
      serverError(91), // ShutdownInProgress
      serverError(10107), // NotWritablePrimary
      serverError(50), // MaxTimeMSExpired
      // A bare socket error the driver lets through: a command written after the server ended the connection.
      Object.assign(new Error("This socket has been ended by the other party"), { code: "EPIPE" }),
      // A client bulkWrite wraps the server's error as its cause.
      Object.assign(new MongoClientBulkWriteError({ message: "bulk write failed" }), { cause: serverError(10107) }),
    ]) {
      expect(isStoreUnavailable(err), err.message).toBe(true);
      expect(storeCallError(err, { capMs: 1000 })).toMatchObject({ code: "unavailable", details: { retryable: true } });
    }
    const duplicateInBulk = Object.assign(new MongoClientBulkWriteError({ message: "bulk write failed" }), {
      cause: serverError(11000),
    });
    for (const err of [
      serverError(11000),
      duplicateInBulk,
      new TypeError("x is undefined"),
      new DomainError("conflict", "busy"),
    ]) {
      expect(isStoreUnavailable(err)).toBe(false);
      expect(storeCallError(err, { capMs: 1000 })).toBe(err);
    }
  });

  it("past the caller's deadline the same failure reads deadline-exceeded; both are unknown outcomes", () => {
    const err = storeCallError(new MongoOperationTimeoutError("timeoutMS"), { deadline: Date.now() - 1, capMs: 1000 });
    expect(err).toMatchObject({ code: "deadline-exceeded" });
    expect(isUnknownStoreOutcome(err)).toBe(true);
    expect(isUnknownStoreOutcome(new DomainError("internal", "bug"))).toBe(false);
  });
});

describe("withinStoreBudget", () => {
  it("gives a read its timeoutMS (and nothing outside), answers at the cap or the deadline, whichever comes first", async () => {
    expect(readTimeout()).toEqual({});
    expect(await withinStoreBudget({ capMs: 500 }, async () => readTimeout(), { cancel: true })).toEqual({
      timeoutMS: 500,
    });
    expect(await withinStoreBudget({ capMs: 500 }, async () => readTimeout())).toEqual({});
    const never = () => new Promise<never>(() => undefined);
    await expect(withinStoreBudget({ capMs: 30 }, never)).rejects.toMatchObject({ code: "unavailable" });
    await expect(withinStoreBudget({ capMs: 5000, deadline: Date.now() + 30 }, never)).rejects.toMatchObject({
      code: "deadline-exceeded",
    });
    await expect(withinStoreBudget({ capMs: 5000, deadline: Date.now() - 1 }, never)).rejects.toMatchObject({
      code: "deadline-exceeded",
    });
    expect(budgetMs({ capMs: 10 ** 12 })).toBe(MAX_TIMER_MS);
  });
});

describe("deadline headers", () => {
  const clamped = (name: string, value: string) => {
    const headers = new Headers({ [name]: value });
    clampDeadlineHeaders(headers);
    return headers.get(name);
  };

  it("keeps deadlines Node's timers can hold, and clamps longer ones to that limit in the header's own grammar", () => {
    expect(clamped("grpc-timeout", "2000m")).toBe("2000m");
    expect(clamped("grpc-timeout", "596H")).toBe("596H");
    expect(clamped("grpc-timeout", "99999999H")).toBe("2147483S");
    expect(clamped("connect-timeout-ms", "2000")).toBe("2000");
    expect(clamped("connect-timeout-ms", "9999999999")).toBe("2147483647");
    // Malformed values are the framework's to refuse.
    expect(clamped("grpc-timeout", "123456789H")).toBe("123456789H");
  });
});
