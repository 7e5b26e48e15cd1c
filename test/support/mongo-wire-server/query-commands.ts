// Read commands: find, getMore, killCursors, count, distinct, aggregate.

import { BSON } from "mongodb";
import { bsonTypeName, integerValue, isDocument, type Doc } from "./bson-values.js";
import { canonicalKey, compareValues } from "./bson-compare.js";
import {
  collectionArgument,
  cursorBatchSize,
  optionalBoolean,
  optionalDocument,
  optionalNonNegativeInteger,
  rejectCollation,
  type CommandContext,
  type CommandHandler,
} from "./command-context.js";
import { compilePipeline } from "./aggregation.js";
import { splitPath, valuesAtPath } from "./document-paths.js";
import { ErrorCode, fail } from "./errors.js";
import { compileProjection } from "./projection.js";
import { compileFilter } from "./query-matcher.js";
import { matchingDocuments } from "./query-planner.js";
import { compileSort, sortDocuments } from "./sort.js";

function documentsOf(context: CommandContext, collection: string): Doc[] {
  return context.server.store.getCollection(context.db, collection)?.all() ?? [];
}

/** The documents matching `filter`, through the planner (an index when one serves the filter). */
function matching(
  context: CommandContext,
  collection: string,
  filter: Doc | undefined,
  predicate: (doc: Doc) => boolean,
): Doc[] {
  const store = context.server.store;
  return matchingDocuments(store, store.getCollection(context.db, collection), filter, predicate);
}

function find(command: Doc, context: CommandContext): Doc {
  const collection = collectionArgument(command, "find", context);
  // Compile everything first: an invalid filter, sort or projection fails even on an empty
  // collection, as in mongod.
  const filter = optionalDocument(command, "find", "filter");
  const predicate = compileFilter(filter);
  const comparator = compileSort(optionalDocument(command, "find", "sort"));
  const projector = compileProjection(optionalDocument(command, "find", "projection"), "find");
  const skip = optionalNonNegativeInteger(command, "find", "skip") ?? 0;
  const limit = optionalNonNegativeInteger(command, "find", "limit");
  const batchSize = optionalNonNegativeInteger(command, "find", "batchSize");
  const singleBatch = optionalBoolean(command, "find", "singleBatch", false);
  rejectCollation(command.collation);

  const matched = sortDocuments(matching(context, collection, filter, predicate), comparator);
  const window = matched.slice(skip, limit ? skip + limit : undefined);
  const results = projector ? window.map(projector) : window;
  const ns = `${context.db}.${collection}`;
  return { cursor: context.server.cursors.openCursor(ns, results, batchSize, singleBatch), ok: 1 };
}

function getMore(command: Doc, context: CommandContext): Doc {
  const id = command.getMore;
  if (!(id instanceof BSON.Long)) {
    fail(
      ErrorCode.TypeMismatch,
      `BSON field 'getMore.getMore' is the wrong type '${bsonTypeName(id)}', expected type 'long'`,
    );
  }
  const collection = command.collection;
  if (typeof collection !== "string")
    fail(
      ErrorCode.TypeMismatch,
      `BSON field 'getMore.collection' is the wrong type '${bsonTypeName(collection)}', expected type 'string'`,
    );
  const batchSize = optionalNonNegativeInteger(command, "getMore", "batchSize");
  return { cursor: context.server.cursors.getMore(id, `${context.db}.${collection}`, batchSize), ok: 1 };
}

function killCursors(command: Doc, context: CommandContext): Doc {
  collectionArgument(command, "killCursors", context);
  const ids = command.cursors;
  if (!Array.isArray(ids))
    fail(
      ErrorCode.TypeMismatch,
      `BSON field 'killCursors.cursors' is the wrong type '${bsonTypeName(ids)}', expected type 'array'`,
    );
  const cursorsKilled: BSON.Long[] = [];
  const cursorsNotFound: BSON.Long[] = [];
  for (const id of ids) {
    if (!(id instanceof BSON.Long))
      fail(
        ErrorCode.TypeMismatch,
        `BSON field 'killCursors.cursors' contains an element of the wrong type '${bsonTypeName(id)}', expected type 'long'`,
      );
    (context.server.cursors.kill(id) || context.server.changeStreams.kill(id) ? cursorsKilled : cursorsNotFound).push(
      id,
    );
  }
  return { cursorsKilled, cursorsNotFound, cursorsAlive: [], cursorsUnknown: [], ok: 1 };
}

function count(command: Doc, context: CommandContext): Doc {
  const collection = collectionArgument(command, "count", context);
  const query = optionalDocument(command, "count", "query");
  const predicate = compileFilter(query);
  rejectCollation(command.collation);
  const skip = command.skip === undefined ? 0 : integerValue(command.skip);
  if (skip === undefined || skip < 0) fail(ErrorCode.BadValue, "skip value is negative in count query");
  // A negative count limit means the same as a positive one.
  const limit = command.limit === undefined ? 0 : Math.abs(integerValue(command.limit) ?? 0);
  let n = Math.max(0, matching(context, collection, query, predicate).length - skip);
  if (limit > 0) n = Math.min(n, limit);
  return { n, ok: 1 };
}

function distinct(command: Doc, context: CommandContext): Doc {
  const collection = collectionArgument(command, "distinct", context);
  const key = command.key;
  if (key === undefined) fail(40414, "BSON field 'distinct.key' is missing but a required field");
  if (typeof key !== "string")
    fail(
      ErrorCode.TypeMismatch,
      `BSON field 'distinct.key' is the wrong type '${bsonTypeName(key)}', expected type 'string'`,
    );
  const query = optionalDocument(command, "distinct", "query");
  const predicate = compileFilter(query);
  rejectCollation(command.collation);
  const parts = splitPath(key);
  const values = new Map<string, unknown>();
  for (const doc of matching(context, collection, query, predicate)) {
    // Array values contribute their elements; missing fields contribute nothing.
    for (const value of valuesAtPath(doc, parts)) {
      if (value !== undefined && !values.has(canonicalKey(value))) values.set(canonicalKey(value), value);
    }
  }
  return { values: [...values.values()].sort(compareValues), ok: 1 };
}

function aggregate(command: Doc, context: CommandContext): Doc {
  if (typeof command.aggregate !== "string") {
    fail(
      ErrorCode.BadValue,
      "collection-less aggregate ({aggregate: 1}) is not supported by the wire-protocol test server",
    );
  }
  const collection = collectionArgument(command, "aggregate", context);
  if (command.explain !== undefined && command.explain !== false)
    fail(ErrorCode.BadValue, "explain is not supported by the wire-protocol test server");
  const head = Array.isArray(command.pipeline) ? command.pipeline[0] : undefined;
  if (isDocument(head) && "$changeStream" in head)
    return context.server.changeStreams.aggregate(command, context, collection);
  for (const stage of Array.isArray(command.pipeline) ? command.pipeline : []) {
    const name = isDocument(stage) ? Object.keys(stage)[0] : undefined;
    if (name === "$out" || name === "$merge")
      fail(ErrorCode.BadValue, `${name} is not supported by the wire-protocol test server`);
  }
  const run = compilePipeline(command.pipeline);
  if (!isDocument(command.cursor))
    fail(ErrorCode.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument");
  rejectCollation(command.collation);
  // A leading $match can use an index; the pipeline still applies it to what the plan fetched.
  const pipeline = command.pipeline as unknown[];
  const first = isDocument(pipeline[0]) && isDocument(pipeline[0].$match) ? pipeline[0].$match : undefined;
  const results = run(first ? matching(context, collection, first, () => true) : documentsOf(context, collection));
  const ns = `${context.db}.${collection}`;
  return { cursor: context.server.cursors.openCursor(ns, results, cursorBatchSize(command, "aggregate")), ok: 1 };
}

export const queryCommands: Record<string, CommandHandler> = {
  find,
  getMore,
  killCursors,
  count,
  distinct,
  aggregate,
};
