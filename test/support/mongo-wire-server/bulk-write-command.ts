// The client-level bulkWrite command of MongoDB 8.0 (admin database): one command whose `ops` write to
// any namespaces of `nsInfo` (each op names its namespace by index). Each op runs as a one-statement
// insert / update / delete, so it behaves exactly like those commands; with `ordered` (the default) the
// first failing op stops the rest. The reply is a cursor of per-op results (only the errors when
// `errorsOnly`) plus the totals.

import { BSON } from "mongodb";
import { bsonTypeName, integerValue, isDocument, isTruthy, type Doc } from "./bson-values.js";
import {
  optionalBoolean,
  requireAdminDatabase,
  requiredArray,
  type CommandContext,
  type CommandHandler,
} from "./command-context.js";
import { ErrorCode, errorReply, fail } from "./errors.js";
import { deleteCommand, insert, update } from "./write-commands.js";

const OP_KINDS = ["insert", "update", "delete"] as const;
type OpKind = (typeof OP_KINDS)[number];

interface Totals {
  nErrors: number;
  nInserted: number;
  nMatched: number;
  nModified: number;
  nUpserted: number;
  nDeleted: number;
}

function namespaces(command: Doc): { db: string; collection: string }[] {
  return requiredArray(command, "bulkWrite", "nsInfo").map((entry, i) => {
    const ns = isDocument(entry) ? entry.ns : undefined;
    if (typeof ns !== "string")
      fail(
        ErrorCode.TypeMismatch,
        `BSON field 'bulkWrite.nsInfo.${i}.ns' is the wrong type '${bsonTypeName(ns)}', expected type 'string'`,
      );
    const dot = ns.indexOf(".");
    if (dot <= 0 || dot === ns.length - 1) fail(ErrorCode.InvalidNamespace, `Invalid namespace specified '${ns}'`);
    return { db: ns.slice(0, dot), collection: ns.slice(dot + 1) };
  });
}

function kindOf(op: Doc, index: number): OpKind {
  const kinds = OP_KINDS.filter((k) => op[k] !== undefined);
  if (kinds.length !== 1)
    fail(
      ErrorCode.FailedToParse,
      `BSON field 'bulkWrite.ops.${index}' must name exactly one of insert, update, delete`,
    );
  return kinds[0] as OpKind;
}

/** The one-statement write command equivalent to one bulkWrite op. */
function asWriteCommand(kind: OpKind, op: Doc, collection: string): Doc {
  if (kind === "insert") return { insert: collection, documents: [op.document], ordered: true };
  if (kind === "update") {
    if (op.updateMods === undefined)
      fail(40414, "BSON field 'bulkWrite.update.updateMods' is missing but a required field");
    return {
      update: collection,
      ordered: true,
      updates: [
        {
          q: op.filter,
          u: op.updateMods,
          multi: isTruthy(op.multi),
          upsert: isTruthy(op.upsert),
          ...(op.arrayFilters !== undefined ? { arrayFilters: op.arrayFilters } : {}),
          ...(op.collation !== undefined ? { collation: op.collation } : {}),
        },
      ],
    };
  }
  return {
    delete: collection,
    ordered: true,
    deletes: [
      {
        q: op.filter,
        limit: isTruthy(op.multi) ? 0 : 1,
        ...(op.collation !== undefined ? { collation: op.collation } : {}),
      },
    ],
  };
}

const HANDLERS: Record<OpKind, CommandHandler> = { insert, update, delete: deleteCommand };

function bulkWrite(command: Doc, context: CommandContext): Doc {
  requireAdminDatabase("bulkWrite", context);
  const nsInfo = namespaces(command);
  const ops = requiredArray(command, "bulkWrite", "ops");
  if (ops.length === 0)
    fail(ErrorCode.InvalidLength, "Write batch sizes must be between 1 and 100000. Got 0 operations.");
  const ordered = optionalBoolean(command, "bulkWrite", "ordered", true);
  const errorsOnly = optionalBoolean(command, "bulkWrite", "errorsOnly", false);
  // Every op is parsed before any runs, like mongod's request parser.
  const parsed = ops.map((op, i) => {
    if (!isDocument(op))
      fail(
        ErrorCode.TypeMismatch,
        `BSON field 'bulkWrite.ops.${i}' is the wrong type '${bsonTypeName(op)}', expected type 'object'`,
      );
    const kind = kindOf(op, i);
    const target = nsInfo[integerValue(op[kind]) ?? -1];
    if (!target) fail(ErrorCode.BadValue, `BulkWrite ops entry ${i} has an invalid nsInfo index`);
    return { kind, target, statement: asWriteCommand(kind, op, target.collection) };
  });

  const totals: Totals = { nErrors: 0, nInserted: 0, nMatched: 0, nModified: 0, nUpserted: 0, nDeleted: 0 };
  const results: Doc[] = [];
  for (const [idx, { kind, target, statement }] of parsed.entries()) {
    let reply: Doc;
    try {
      reply = HANDLERS[kind](statement, { ...context, db: target.db });
    } catch (err) {
      reply = errorReply(err, kind); // a whole-statement failure (bad namespace, bad update) is this op's error
    }
    const error = reply.ok === 1 ? (reply.writeErrors as Doc[] | undefined)?.[0] : reply;
    if (error) {
      const { index: _index, ok: _ok, ...detail } = error;
      totals.nErrors++;
      results.push({ ok: 0, idx, n: 0, ...detail });
      if (ordered) break;
      continue;
    }
    results.push(count(kind, idx, reply, totals));
  }
  return {
    cursor: {
      id: BSON.Long.ZERO,
      firstBatch: errorsOnly ? results.filter((r) => r.ok === 0) : results,
      ns: "admin.$cmd.bulkWrite",
    },
    ...totals,
    ok: 1,
  };
}

/** Adds one successful op to the totals; returns its per-op result. */
function count(kind: OpKind, idx: number, reply: Doc, totals: Totals): Doc {
  const n = Number(reply.n);
  if (kind === "insert") {
    totals.nInserted += n;
    return { ok: 1, idx, n };
  }
  if (kind === "delete") {
    totals.nDeleted += n;
    return { ok: 1, idx, n };
  }
  const upserted = (reply.upserted as Doc[] | undefined)?.[0];
  totals.nUpserted += upserted ? 1 : 0;
  totals.nMatched += upserted ? 0 : n;
  totals.nModified += Number(reply.nModified);
  return { ok: 1, idx, n, nModified: reply.nModified, ...(upserted ? { upserted: { _id: upserted._id } } : {}) };
}

export const bulkWriteCommands: Record<string, CommandHandler> = { bulkWrite };
