// What command implementations receive, and the argument checks they share. Argument errors
// use the messages of mongod's IDL parser ("BSON field 'find.filter' is the wrong type ...").

import type { BSON } from "mongodb";
import { bsonTypeName, integerValue, isDocument, isNumeric, toDouble, type Doc } from "./bson-values.js";
import { validateCollectionName, validateDatabaseName, type Store } from "./collection-store.js";
import type { ChangeStreamCursors } from "./change-streams.js";
import type { CursorManager } from "./cursors.js";
import { ErrorCode, fail } from "./errors.js";
import type { FailPoints } from "./fail-points.js";
import type { RetryableWrites } from "./retryable-writes.js";
import type { TtlMonitor } from "./ttl-monitor.js";

export interface ServerState {
  readonly store: Store;
  readonly cursors: CursorManager;
  readonly changeStreams: ChangeStreamCursors;
  readonly ttl: TtlMonitor;
  readonly failPoints: FailPoints;
  readonly retryableWrites: RetryableWrites;
  /** The replica set this server is the only member (and primary) of; undefined: a standalone server. */
  readonly replicaSet: string | undefined;
  /** hello's topologyVersion: constant, as nothing here ever changes the topology. */
  readonly topologyVersion: { readonly processId: BSON.ObjectId; readonly counter: BSON.Long };
  readonly host: string;
  readonly port: number;
  readonly startedAt: Date;
  currentConnections(): number;
  totalConnections(): number;
  /** Reports a bug in the test server (an InternalError answered to a client). */
  logInternalError(commandName: string, error: unknown): void;
  /** MongoWireServerOptions.onCommand. */
  readonly onCommand?: (body: Doc) => void;
}

export interface CommandContext {
  readonly server: ServerState;
  /** The database the command runs against (`$db`). */
  readonly db: string;
  readonly connectionId: number;
  readonly clientAddress: string;
  /** The application name the connection's handshake gave (fail points may target it). */
  readonly appName?: string | undefined;
}

export type CommandHandler = (command: Doc, context: CommandContext) => Doc;

function wrongType(commandName: string, field: string, value: unknown, expected: string): never {
  return fail(
    ErrorCode.TypeMismatch,
    `BSON field '${commandName}.${field}' is the wrong type '${bsonTypeName(value)}', expected type '${expected}'`,
  );
}

/** The collection a command names in its first field ({find: "users"}). */
export function collectionArgument(command: Doc, commandName: string, context: CommandContext): string {
  const name = command[commandName];
  if (typeof name !== "string") {
    fail(ErrorCode.InvalidNamespace, `collection name has invalid type ${bsonTypeName(name)}`);
  }
  validateDatabaseName(context.db);
  validateCollectionName(context.db, name);
  return name;
}

export function optionalDocument(command: Doc, commandName: string, field: string): Doc | undefined {
  const value = command[field];
  if (value === undefined || value === null) return undefined;
  if (!isDocument(value)) wrongType(commandName, field, value, "object");
  return value;
}

export function requiredDocument(command: Doc, commandName: string, field: string): Doc {
  const value = optionalDocument(command, commandName, field);
  if (value === undefined) fail(40414, `BSON field '${commandName}.${field}' is missing but a required field`);
  return value;
}

export function requiredArray(command: Doc, commandName: string, field: string): unknown[] {
  const value = command[field];
  if (value === undefined) fail(40414, `BSON field '${commandName}.${field}' is missing but a required field`);
  if (!Array.isArray(value)) wrongType(commandName, field, value, "array");
  return value;
}

export function optionalBoolean(command: Doc, commandName: string, field: string, fallback: boolean): boolean {
  const value = command[field];
  if (value === undefined || value === null) return fallback;
  if (typeof value === "boolean") return value;
  if (isNumeric(value)) return toDouble(value) !== 0;
  return wrongType(commandName, field, value, "bool");
}

/** skip / limit / batchSize: integers that must not be negative. */
export function optionalNonNegativeInteger(command: Doc, commandName: string, field: string): number | undefined {
  const value = command[field];
  if (value === undefined || value === null) return undefined;
  if (!isNumeric(value)) wrongType(commandName, field, value, "long");
  const n = integerValue(value) ?? Math.trunc(toDouble(value));
  if (n < 0) fail(51024, `BSON field '${field}' value must be >= 0, actual value '${n}'`);
  return n;
}

/** The cursor option of aggregate / listCollections / listIndexes: {batchSize}. */
export function cursorBatchSize(command: Doc, commandName: string): number | undefined {
  const cursor = optionalDocument(command, commandName, "cursor");
  return cursor ? optionalNonNegativeInteger(cursor, `${commandName}.cursor`, "batchSize") : undefined;
}

/** The server compares strings by binary value only; a real collation would silently differ. */
export function rejectCollation(collation: unknown): void {
  if (collation === undefined || collation === null) return;
  if (isDocument(collation) && collation.locale === "simple") return;
  fail(
    ErrorCode.BadValue,
    "collations other than {locale: 'simple'} are not supported by the wire-protocol test server",
  );
}

export function requireAdminDatabase(commandName: string, context: CommandContext): void {
  if (context.db !== "admin")
    fail(ErrorCode.Unauthorized, `${commandName} may only be run against the admin database.`);
}
