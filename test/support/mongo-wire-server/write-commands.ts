// Write commands: insert, update, delete, findAndModify.
//
// As in mongod, each statement of a write command is its own unit: a statement that fails is
// reported in `writeErrors` (with its index) and changes nothing; with `ordered: true` (the
// default) the remaining statements are skipped, with `ordered: false` they still run.
// findAndModify reports failures as a command error instead.

import { BSON } from "mongodb";
import {
  bsonTypeName,
  formatValue,
  integerValue,
  isDocument,
  isTruthy,
  sameBytes,
  withIdFirst,
  type Doc,
} from "./bson-values.js";
import type { Collection } from "./collection-store.js";
import {
  collectionArgument,
  optionalBoolean,
  optionalDocument,
  rejectCollation,
  requiredArray,
  requiredDocument,
  type CommandContext,
  type CommandHandler,
} from "./command-context.js";
import { ErrorCode, fail, writeErrorEntry } from "./errors.js";
import { compileProjection } from "./projection.js";
import { compileFilter } from "./query-matcher.js";
import { matchingDocuments } from "./query-planner.js";
import { compileSort, sortDocuments } from "./sort.js";
import { compileUpdate } from "./update-operators.js";
import { buildUpsertDocument } from "./upsert-document.js";

const MAX_WRITE_BATCH_SIZE = 100_000;

function statements(command: Doc, commandName: string, field: string): unknown[] {
  const list = requiredArray(command, commandName, field);
  if (list.length === 0 || list.length > MAX_WRITE_BATCH_SIZE) {
    fail(
      ErrorCode.InvalidLength,
      `Write batch sizes must be between 1 and ${MAX_WRITE_BATCH_SIZE}. Got ${list.length} operations.`,
    );
  }
  return list;
}

/** Runs each statement, collecting writeErrors with mongod's ordered / unordered semantics. */
function runStatements<T>(list: readonly T[], ordered: boolean, run: (statement: T, index: number) => void): Doc[] {
  const writeErrors: Doc[] = [];
  for (let i = 0; i < list.length; i++) {
    try {
      run(list[i] as T, i);
    } catch (error) {
      writeErrors.push(writeErrorEntry(i, error));
      if (ordered) break;
    }
  }
  return writeErrors;
}

function withWriteErrors(reply: Doc, writeErrors: Doc[]): Doc {
  return writeErrors.length > 0 ? { ...reply, writeErrors, ok: 1 } : { ...reply, ok: 1 };
}

/**
 * A document to insert, with `_id` first (generated when missing, as mongod does). No deep copy: the
 * command was decoded from the wire for this call alone, so nothing else holds its documents.
 */
function prepareInsert(doc: Doc): Doc {
  return Object.hasOwn(doc, "_id") ? withIdFirst(doc) : { _id: new BSON.ObjectId(), ...doc };
}

export function insert(command: Doc, context: CommandContext): Doc {
  const name = collectionArgument(command, "insert", context);
  const documents = statements(command, "insert", "documents").map((doc, i) => {
    if (!isDocument(doc))
      fail(
        ErrorCode.TypeMismatch,
        `BSON field 'insert.documents.${i}' is the wrong type '${bsonTypeName(doc)}', expected type 'object'`,
      );
    return doc;
  });
  const ordered = optionalBoolean(command, "insert", "ordered", true);
  const { collection } = context.server.store.getOrCreateCollection(context.db, name);
  let n = 0;
  const writeErrors = runStatements(documents, ordered, (doc) => {
    collection.insert(prepareInsert(doc));
    n++;
  });
  return withWriteErrors({ n }, writeErrors);
}

export function update(command: Doc, context: CommandContext): Doc {
  const name = collectionArgument(command, "update", context);
  const updates = statements(command, "update", "updates");
  const ordered = optionalBoolean(command, "update", "ordered", true);
  const store = context.server.store;
  let n = 0;
  let nModified = 0;
  const upserted: Doc[] = [];

  // Statement shape is checked for the whole command first, like mongod's request parser.
  const parsed = updates.map((statement) => {
    if (!isDocument(statement))
      fail(
        ErrorCode.TypeMismatch,
        "BSON field 'update.updates' contains an element of the wrong type, expected type 'object'",
      );
    const query = requiredDocument(statement, "update.updates", "q");
    if (statement.u === undefined) fail(40414, "BSON field 'update.updates.u' is missing but a required field");
    return { statement, query };
  });

  const writeErrors = runStatements(parsed, ordered, ({ statement, query }, index) => {
    if (statement.arrayFilters !== undefined)
      fail(ErrorCode.BadValue, "arrayFilters are not supported by the wire-protocol test server");
    rejectCollation(statement.collation);
    const predicate = compileFilter(query);
    const compiled = compileUpdate(statement.u);
    const multi = isTruthy(statement.multi);
    if (multi && compiled.isReplacement)
      fail(ErrorCode.FailedToParse, "multi update is not supported for replacement-style update");

    const collection = store.getCollection(context.db, name);
    const matches = matchingDocuments(store, collection, query, predicate);
    if (matches.length === 0) {
      if (!isTruthy(statement.upsert)) return;
      const doc = buildUpsertDocument(query, compiled);
      store.getOrCreateCollection(context.db, name).collection.insert(doc);
      n++;
      upserted.push({ index, _id: doc._id });
      return;
    }
    // All matching documents are chosen before any is changed (no document is updated twice).
    for (const current of multi ? matches : matches.slice(0, 1)) {
      const next = compiled.apply(current, { isInsert: false });
      if (!sameBytes(current, next)) {
        (collection as Collection).replace(current, next, compiled.isReplacement ? "replace" : "update");
        nModified++;
      }
      n++;
    }
  });
  const reply: Doc = { n, nModified };
  if (upserted.length > 0) reply.upserted = upserted;
  return withWriteErrors(reply, writeErrors);
}

export function deleteCommand(command: Doc, context: CommandContext): Doc {
  const name = collectionArgument(command, "delete", context);
  const deletes = statements(command, "delete", "deletes");
  const ordered = optionalBoolean(command, "delete", "ordered", true);
  let n = 0;
  const parsed = deletes.map((statement) => {
    if (!isDocument(statement))
      fail(
        ErrorCode.TypeMismatch,
        "BSON field 'delete.deletes' contains an element of the wrong type, expected type 'object'",
      );
    const query = requiredDocument(statement, "delete.deletes", "q");
    const limit = integerValue(statement.limit);
    if (limit !== 0 && limit !== 1)
      fail(
        ErrorCode.FailedToParse,
        `The limit field in delete objects must be 0 or 1. Got ${formatValue(statement.limit)}`,
      );
    return { statement, query, limit };
  });
  const writeErrors = runStatements(parsed, ordered, ({ statement, query, limit }) => {
    rejectCollation(statement.collation);
    const predicate = compileFilter(query);
    const collection = context.server.store.getCollection(context.db, name);
    if (!collection) return;
    const matches = matchingDocuments(context.server.store, collection, query, predicate);
    for (const doc of limit === 1 ? matches.slice(0, 1) : matches) if (collection.remove(doc)) n++;
  });
  return withWriteErrors({ n }, writeErrors);
}

function findAndModify(command: Doc, context: CommandContext): Doc {
  const commandName = Object.keys(command)[0] as string; // findAndModify or findandmodify
  const name = collectionArgument(command, commandName, context);
  const query = optionalDocument(command, commandName, "query") ?? {};
  const remove = optionalBoolean(command, commandName, "remove", false);
  const returnNew = optionalBoolean(command, commandName, "new", false);
  const upsert = optionalBoolean(command, commandName, "upsert", false);
  const hasUpdate = command.update !== undefined;
  if (!remove && !hasUpdate) fail(ErrorCode.FailedToParse, "Either an update or remove=true must be specified");
  if (remove && hasUpdate) fail(ErrorCode.FailedToParse, "Cannot specify both an update and remove=true");
  if (remove && upsert) fail(ErrorCode.FailedToParse, "Cannot specify both upsert=true and remove=true ");
  if (remove && returnNew)
    fail(
      ErrorCode.FailedToParse,
      "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document",
    );
  if (command.arrayFilters !== undefined)
    fail(ErrorCode.BadValue, "arrayFilters are not supported by the wire-protocol test server");
  rejectCollation(command.collation);

  const predicate = compileFilter(query);
  const comparator = compileSort(optionalDocument(command, commandName, "sort"));
  const projector = compileProjection(optionalDocument(command, commandName, "fields"), "find");
  const compiled = hasUpdate ? compileUpdate(command.update) : undefined;
  const project = (doc: Doc | null): Doc | null => (doc && projector ? projector(doc) : doc);

  const store = context.server.store;
  const collection = store.getCollection(context.db, name);
  const [current] = sortDocuments(matchingDocuments(store, collection, query, predicate), comparator);

  if (remove) {
    if (!current || !collection) return { lastErrorObject: { n: 0 }, value: null, ok: 1 };
    collection.remove(current);
    return { lastErrorObject: { n: 1 }, value: project(current), ok: 1 };
  }
  const updateSpec = compiled as NonNullable<typeof compiled>;
  if (current && collection) {
    const next = updateSpec.apply(current, { isInsert: false });
    if (!sameBytes(current, next)) collection.replace(current, next);
    return { lastErrorObject: { n: 1, updatedExisting: true }, value: project(returnNew ? next : current), ok: 1 };
  }
  if (!upsert) return { lastErrorObject: { n: 0, updatedExisting: false }, value: null, ok: 1 };
  const doc = buildUpsertDocument(query, updateSpec);
  store.getOrCreateCollection(context.db, name).collection.insert(doc);
  return {
    lastErrorObject: { n: 1, updatedExisting: false, upserted: doc._id },
    value: project(returnNew ? doc : null),
    ok: 1,
  };
}

export const writeCommands: Record<string, CommandHandler> = {
  insert,
  update,
  delete: deleteCommand,
  findAndModify,
  findandmodify: findAndModify,
};
