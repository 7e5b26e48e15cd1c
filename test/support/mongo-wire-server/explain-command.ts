// explain: the plan the query planner chooses for a find, count, distinct, aggregate (its
// leading $match), update, delete or findAndModify, with mongod's executionStats counters
// (keys and documents examined). Nothing is written.

import { bsonTypeName, isDocument, type Doc } from "./bson-values.js";
import type { CommandContext, CommandHandler } from "./command-context.js";
import { ErrorCode, fail } from "./errors.js";
import { compileFilter } from "./query-matcher.js";
import { planQuery } from "./query-planner.js";

function firstStatement(inner: Doc, field: string): Doc | undefined {
  const list = inner[field];
  if (!Array.isArray(list) || list.length !== 1 || !isDocument(list[0]))
    fail(ErrorCode.InvalidLength, `explain of ${Object.keys(inner)[0]} needs exactly one statement in '${field}'`);
  return isDocument(list[0].q) ? list[0].q : undefined;
}

/** The filter an explained command would run. */
function filterOf(name: string, inner: Doc): Doc | undefined {
  const asDoc = (value: unknown): Doc | undefined => (isDocument(value) ? value : undefined);
  switch (name) {
    case "find":
      return asDoc(inner.filter);
    case "count":
    case "distinct":
    case "findAndModify":
    case "findandmodify":
      return asDoc(inner.query);
    case "aggregate": {
      const first = Array.isArray(inner.pipeline) ? inner.pipeline[0] : undefined;
      return isDocument(first) ? asDoc(first.$match) : undefined;
    }
    case "update":
      return firstStatement(inner, "updates");
    case "delete":
      return firstStatement(inner, "deletes");
    default:
      return fail(ErrorCode.CommandNotFound, `explain is not supported for '${name}' by the wire-protocol test server`);
  }
}

function explain(command: Doc, context: CommandContext): Doc {
  const inner = command.explain;
  if (!isDocument(inner))
    fail(
      ErrorCode.TypeMismatch,
      `BSON field 'explain.explain' is the wrong type '${bsonTypeName(inner)}', expected type 'object'`,
    );
  const name = Object.keys(inner)[0] ?? "";
  const collectionName = inner[name];
  if (typeof collectionName !== "string") fail(ErrorCode.BadValue, `explain of '${name}' needs a collection name`);
  const filter = filterOf(name, inner);
  const predicate = compileFilter(filter);
  const collection = context.server.store.getCollection(context.db, collectionName);
  const plan = planQuery(collection, filter);
  const index = collection?.indexes.find((candidate) => candidate.name === plan.indexName);
  const scan: Doc = index
    ? { stage: "IXSCAN", indexName: index.name, keyPattern: index.keyPattern }
    : { stage: plan.stage };
  const winningPlan = index ? { stage: "FETCH", inputStage: scan } : scan;
  return {
    queryPlanner: { namespace: `${context.db}.${collectionName}`, winningPlan, rejectedPlans: [] },
    executionStats: {
      executionSuccess: true,
      nReturned: plan.candidates.filter(predicate).length,
      totalKeysExamined: plan.keysExamined,
      totalDocsExamined: plan.candidates.length,
      executionStages: winningPlan,
    },
    ok: 1,
  };
}

export const explainCommands: Record<string, CommandHandler> = { explain };
