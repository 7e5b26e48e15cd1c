// createIndexes, listIndexes, dropIndexes.

import { formatValue, isDocument, sameBytes, type Doc } from "./bson-values.js";
import {
  collectionArgument,
  cursorBatchSize,
  requiredArray,
  type CommandContext,
  type CommandHandler,
} from "./command-context.js";
import { Collection } from "./collection-store.js";
import { ErrorCode, fail } from "./errors.js";
import { normalizeIndexSpec } from "./indexes.js";

function createIndexes(command: Doc, context: CommandContext): Doc {
  const name = collectionArgument(command, "createIndexes", context);
  const specs = requiredArray(command, "createIndexes", "indexes");
  if (specs.length === 0) fail(ErrorCode.BadValue, "Must specify at least one index to create");
  // Validate every spec before creating anything.
  specs.forEach((spec) => normalizeIndexSpec(spec));

  const store = context.server.store;
  const existing = store.getCollection(context.db, name);
  const before = existing?.indexes.length ?? 1;
  // All-or-nothing: a failing spec leaves the collection (even a new one) as it was.
  const scratch = existing ?? new Collection(context.db, name);
  const created = scratch.createIndexes(specs);
  if (created === 0)
    return { numIndexesBefore: before, numIndexesAfter: before, note: "all indexes already exist", ok: 1 };
  if (existing)
    return {
      numIndexesBefore: before,
      numIndexesAfter: existing.indexes.length,
      createdCollectionAutomatically: false,
      ok: 1,
    };
  const { collection } = store.getOrCreateCollection(context.db, name);
  collection.createIndexes(specs);
  return {
    numIndexesBefore: before,
    numIndexesAfter: collection.indexes.length,
    createdCollectionAutomatically: true,
    ok: 1,
  };
}

function listIndexes(command: Doc, context: CommandContext): Doc {
  const name = collectionArgument(command, "listIndexes", context);
  const collection = context.server.store.getCollection(context.db, name);
  if (!collection) fail(ErrorCode.NamespaceNotFound, `ns does not exist: ${context.db}.${name}`);
  const specs = collection.indexes.map((index) => index.spec);
  return {
    cursor: context.server.cursors.openCursor(`${context.db}.${name}`, specs, cursorBatchSize(command, "listIndexes")),
    ok: 1,
  };
}

function dropIndexes(command: Doc, context: CommandContext): Doc {
  const commandName = Object.keys(command)[0] as string; // dropIndexes or deleteIndexes
  const name = collectionArgument(command, commandName, context);
  const collection = context.server.store.getCollection(context.db, name);
  if (!collection) fail(ErrorCode.NamespaceNotFound, `ns not found ${context.db}.${name}`);
  const nIndexesWas = collection.indexes.length;
  const target = command.index;
  if (target === "*") {
    for (const index of [...collection.indexes]) if (index.name !== "_id_") collection.dropIndex(index.name);
    return { nIndexesWas, msg: "non-_id indexes dropped for collection", ok: 1 };
  }
  const names = resolveIndexNames(collection, target);
  // Check every name before dropping any, so that a bad name drops nothing.
  for (const indexName of names) {
    if (indexName === "_id_") fail(ErrorCode.InvalidOptions, "cannot drop _id index");
    if (!collection.indexes.some((index) => index.name === indexName))
      fail(ErrorCode.IndexNotFound, `index not found with name [${indexName}]`);
  }
  for (const indexName of names) collection.dropIndex(indexName);
  return { nIndexesWas, ok: 1 };
}

function resolveIndexNames(collection: Collection, target: unknown): string[] {
  if (typeof target === "string") return [target];
  if (Array.isArray(target) && target.every((entry) => typeof entry === "string")) return target as string[];
  if (isDocument(target)) {
    const index = collection.indexes.find((candidate) => sameBytes(candidate.keyPattern, target));
    if (!index) fail(ErrorCode.IndexNotFound, `can't find index with key: ${formatValue(target)}`);
    return [index.name];
  }
  return fail(
    ErrorCode.TypeMismatch,
    "BSON field 'dropIndexes.index' is the wrong type, expected types '[string, object, array]'",
  );
}

export const indexCommands: Record<string, CommandHandler> = {
  createIndexes,
  listIndexes,
  dropIndexes,
  deleteIndexes: dropIndexes,
};
