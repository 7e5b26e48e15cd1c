// Command errors carrying MongoDB's real error codes, so that the driver raises the same
// MongoServerError (code, codeName, errmsg, extra fields) it would raise against mongod.

import type { Doc } from "./bson-values.js";

/** The named codes we use (from mongod's src/mongo/base/error_codes.yml). */
export const ErrorCode = {
  InternalError: 1,
  BadValue: 2,
  FailedToParse: 9,
  Unauthorized: 13,
  TypeMismatch: 14,
  InvalidLength: 16,
  IllegalOperation: 20,
  InvalidBSON: 22,
  NamespaceNotFound: 26,
  IndexNotFound: 27,
  PathNotViable: 28,
  ConflictingUpdateOperators: 40,
  CursorNotFound: 43,
  MaxTimeMSExpired: 50,
  NamespaceExists: 48,
  DollarPrefixedFieldName: 52,
  InvalidIdField: 53,
  NotSingleValueField: 54,
  EmptyFieldName: 56,
  CommandNotFound: 59,
  ImmutableField: 66,
  CannotCreateIndex: 67,
  InvalidOptions: 72,
  InvalidNamespace: 73,
  IndexOptionsConflict: 85,
  IndexKeySpecsConflict: 86,
  InvalidPipelineOperator: 168,
  InvalidIndexSpecificationOption: 197,
  TransactionTooOld: 225,
  InvalidResumeToken: 260,
  ChangeStreamHistoryLost: 286,
  NotWritablePrimary: 10107,
  HostUnreachable: 6,
  NetworkTimeout: 89,
  ShutdownInProgress: 91,
  PrimarySteppedDown: 189,
  SocketException: 9001,
  InterruptedDueToReplStateChange: 11602,
  UnsupportedOpQueryCommand: 352,
  DuplicateKey: 11000,
} as const;

const codeNames = new Map<number, string>(Object.entries(ErrorCode).map(([name, code]) => [code, name]));

/** mongod names unnamed assertion codes "Location<code>". */
export function codeNameFor(code: number): string {
  return codeNames.get(code) ?? `Location${code}`;
}

/** An error that becomes `{ok: 0, errmsg, code, codeName, ...extra}` (or a writeErrors entry). */
export class CommandError extends Error {
  readonly code: number;
  readonly codeName: string;
  readonly extra: Doc;

  constructor(code: number, message: string, extra: Doc = {}) {
    super(message);
    this.name = "CommandError";
    this.code = code;
    this.codeName = codeNameFor(code);
    this.extra = extra;
  }
}

/** Shorthand used all over the command implementations. */
export function fail(code: number, message: string, extra: Doc = {}): never {
  throw new CommandError(code, message, extra);
}

/**
 * Thrown to drop the client's connection without a reply (a fail point's `closeConnection`):
 * the client sees a network error, as when a mongod is killed or a network partition starts.
 */
export class CloseConnection extends Error {
  override name = "CloseConnection";
}

/** Converts anything thrown while running a command into a command reply. */
export function errorReply(error: unknown, commandName: string): Doc {
  if (error instanceof CommandError) {
    return { ok: 0, errmsg: error.message, code: error.code, codeName: error.codeName, ...error.extra };
  }
  // A bug in the test server itself: report it like mongod reports an internal error,
  // but keep serving (the caller logs it).
  const message = error instanceof Error ? error.message : String(error);
  return {
    ok: 0,
    errmsg: `wire-protocol test server internal error while running '${commandName}': ${message}`,
    code: ErrorCode.InternalError,
    codeName: "InternalError",
  };
}

/** The entry a write command puts in its `writeErrors` array for a failed statement. */
export function writeErrorEntry(index: number, error: unknown): Doc {
  const reply = errorReply(error, "write");
  const { ok: _ok, codeName: _codeName, errmsg, code, ...extra } = reply;
  return { index, code, errmsg, ...extra };
}
