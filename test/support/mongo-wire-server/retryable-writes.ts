// Retryable writes, as a replica set primary runs them: a write command carrying `lsid` and
// `txnNumber` is applied once per (session, txnNumber). A retry of the same txnNumber (the
// driver sends one after a network error or a RetryableWriteError) gets the reply of the first
// execution instead of running again; an older txnNumber is TransactionTooOld. Errors that a
// client may retry get the `RetryableWriteError` label, as mongod 4.4+ attaches it itself.

import { BSON } from "mongodb";
import { integerValue, isDocument, type Doc } from "./bson-values.js";
import { ErrorCode, fail } from "./errors.js";

/** The commands a driver sends as retryable writes. */
export const RETRYABLE_WRITE_COMMANDS = new Set([
  "insert",
  "update",
  "delete",
  "findAndModify",
  "findandmodify",
  "bulkWrite",
]);

/** Codes mongod labels RetryableWriteError (the retryable-writes spec's list). */
export const RETRYABLE_WRITE_ERROR_CODES = new Set([
  6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 134,
]);

/** Codes mongod labels ResumableChangeStreamError on a change stream's getMore (and network-ish ones). */
export const RESUMABLE_CHANGE_STREAM_ERROR_CODES = new Set([
  6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150, 13388, 234, 133, 43,
]);

const TRANSACTION_TOO_OLD = 225;

interface SessionRecord {
  txnNumber: bigint;
  reply: Doc;
}

function sessionKey(lsid: unknown): string {
  const id = isDocument(lsid) ? lsid.id : undefined;
  if (id instanceof BSON.Binary) return Buffer.from(id.buffer).toString("hex");
  if (id instanceof BSON.UUID) return id.toHexString();
  return fail(ErrorCode.InvalidOptions, "Transaction number requires a session ID to also be specified");
}

function txnNumberOf(value: unknown): bigint {
  if (value instanceof BSON.Long) return value.toBigInt();
  const n = integerValue(value);
  if (n !== undefined) return BigInt(n);
  return fail(ErrorCode.TypeMismatch, "BSON field 'txnNumber' is the wrong type, expected type 'long'");
}

export class RetryableWrites {
  private readonly sessions = new Map<string, SessionRecord>();
  /** Retries answered from a session's record, for tests. */
  retriesAnswered = 0;

  /**
   * Runs `execute` unless this (lsid, txnNumber) already ran, in which case its first reply is
   * returned. Only replies with ok: 1 are recorded (a command error changed nothing).
   */
  run(command: Doc, execute: () => Doc): { reply: Doc; retried: boolean } {
    const key = sessionKey(command.lsid);
    const txnNumber = txnNumberOf(command.txnNumber);
    const record = this.sessions.get(key);
    if (record && txnNumber < record.txnNumber) {
      fail(
        TRANSACTION_TOO_OLD,
        `Retryable write with txnNumber ${txnNumber} is prohibited on session because a newer retryable write with txnNumber ${record.txnNumber} has already started on this session.`,
      );
    }
    if (record && txnNumber === record.txnNumber) {
      this.retriesAnswered++;
      return { reply: record.reply, retried: true };
    }
    const reply = execute();
    if (reply.ok === 1) this.sessions.set(key, { txnNumber, reply });
    return { reply, retried: false };
  }

  clear(): void {
    this.sessions.clear();
  }
}
