// Command dispatch: finds the handler for the command named by the body's first field and
// turns every failure into a command reply (the server must keep serving whatever happens).
//
// Generic fields the driver adds ($db, lsid, $clusterTime, $readPreference, readConcern,
// writeConcern, apiVersion, maxTimeMS, comment...) are accepted and ignored by every command.

import { adminCommands } from "./admin-commands.js";
import type { Doc } from "./bson-values.js";
import { bulkWriteCommands } from "./bulk-write-command.js";
import type { CommandContext, CommandHandler } from "./command-context.js";
import { CloseConnection, CommandError, ErrorCode, errorReply, fail } from "./errors.js";
import { explainCommands } from "./explain-command.js";
import { indexCommands } from "./index-commands.js";
import { queryCommands } from "./query-commands.js";
import {
  RESUMABLE_CHANGE_STREAM_ERROR_CODES,
  RETRYABLE_WRITE_COMMANDS,
  RETRYABLE_WRITE_ERROR_CODES,
} from "./retryable-writes.js";
import { writeCommands } from "./write-commands.js";

const COMMANDS = new Map<string, CommandHandler>(
  Object.entries({
    ...adminCommands,
    ...queryCommands,
    ...writeCommands,
    ...bulkWriteCommands,
    ...indexCommands,
    ...explainCommands,
  }),
);

/** Commands a client may send with the legacy OP_QUERY opcode (only the handshake, as in mongod 6+). */
export const OP_QUERY_COMMANDS = new Set(["hello", "isMaster", "ismaster"]);

export function supportedCommandNames(): string[] {
  return [...COMMANDS.keys()];
}

/**
 * runCommand, except that a getMore on a change stream answers later (awaitData): the connection
 * holds its next requests until the reply is written.
 */
export function runAwaitableCommand(command: Doc, context: CommandContext): Doc | Promise<Doc> {
  if (Object.keys(command)[0] === "getMore" && context.server.changeStreams.owns(command.getMore)) {
    return context.server.changeStreams.getMore(command, context).catch((error: unknown) => {
      if (!(error instanceof CommandError)) context.server.logInternalError("getMore", error);
      return withErrorLabels(errorReply(error, "getMore"), command, context);
    });
  }
  return runCommand(command, context);
}

/**
 * The labels mongod 4.4+ attaches to an error itself: RetryableWriteError on a retryable write
 * (one with a txnNumber) failing with a retryable code, ResumableChangeStreamError on a change
 * stream's getMore failing with a resumable one.
 */
export function errorLabelsFor(command: Doc, code: number, context: CommandContext): string[] {
  const name = Object.keys(command)[0] ?? "";
  if (command.txnNumber !== undefined && RETRYABLE_WRITE_COMMANDS.has(name) && RETRYABLE_WRITE_ERROR_CODES.has(code))
    return ["RetryableWriteError"];
  if (
    name === "getMore" &&
    RESUMABLE_CHANGE_STREAM_ERROR_CODES.has(code) &&
    context.server.changeStreams.owns(command.getMore)
  )
    return ["ResumableChangeStreamError"];
  return [];
}

function withErrorLabels(reply: Doc, command: Doc, context: CommandContext): Doc {
  if (reply.ok !== 0 || typeof reply.code !== "number") return reply;
  const labels = errorLabelsFor(command, reply.code, context);
  return labels.length > 0 ? { ...reply, errorLabels: labels } : reply;
}

export function runCommand(command: Doc, context: CommandContext): Doc {
  const name = Object.keys(command)[0] ?? "";
  try {
    const handler = COMMANDS.get(name);
    if (!handler) fail(ErrorCode.CommandNotFound, `no such command: '${name}'`);
    if (command.startTransaction !== undefined || command.autocommit !== undefined) {
      if (!context.server.replicaSet)
        fail(ErrorCode.IllegalOperation, "Transaction numbers are only allowed on a replica set member or mongos");
      fail(
        ErrorCode.IllegalOperation,
        "multi-document transactions are not supported by the wire-protocol test server",
      );
    }
    if (command.txnNumber === undefined) return handler(command, context);
    // A standalone mongod rejects retryable writes; a replica set primary runs each one once.
    if (!context.server.replicaSet)
      fail(ErrorCode.IllegalOperation, "Transaction numbers are only allowed on a replica set member or mongos");
    if (!RETRYABLE_WRITE_COMMANDS.has(name)) fail(50768, `It is illegal to provide a txnNumber for command ${name}`);
    const { reply, retried } = context.server.retryableWrites.run(command, () => handler(command, context));
    // The onPrimaryTransactionalWrite fail point: the write is applied, its reply is lost.
    if (!retried && context.server.failPoints.closeAfterRetryableWrite())
      throw new CloseConnection("onPrimaryTransactionalWrite fail point");
    return reply;
  } catch (error) {
    if (error instanceof CloseConnection) throw error;
    if (!(error instanceof CommandError)) context.server.logInternalError(name, error);
    return withErrorLabels(errorReply(error, name), command, context);
  }
}
