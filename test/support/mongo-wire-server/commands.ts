// Command dispatch: finds the handler for the command named by the body's first field and
// turns every failure into a command reply (the server must keep serving whatever happens).
//
// Generic fields the driver adds ($db, lsid, $clusterTime, $readPreference, readConcern,
// writeConcern, apiVersion, maxTimeMS, comment...) are accepted and ignored by every command.

import { adminCommands } from "./admin-commands.js";
import type { Doc } from "./bson-values.js";
import { bulkWriteCommands } from "./bulk-write-command.js";
import type { CommandContext, CommandHandler } from "./command-context.js";
import { CommandError, ErrorCode, errorReply, fail } from "./errors.js";
import { explainCommands } from "./explain-command.js";
import { indexCommands } from "./index-commands.js";
import { queryCommands } from "./query-commands.js";
import { writeCommands } from "./write-commands.js";

const COMMANDS = new Map<string, CommandHandler>(Object.entries({ ...adminCommands, ...queryCommands, ...writeCommands, ...bulkWriteCommands, ...indexCommands, ...explainCommands }));

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
      return errorReply(error, "getMore");
    });
  }
  return runCommand(command, context);
}

export function runCommand(command: Doc, context: CommandContext): Doc {
  const name = Object.keys(command)[0] ?? "";
  try {
    const handler = COMMANDS.get(name);
    if (!handler) fail(ErrorCode.CommandNotFound, `no such command: '${name}'`);
    // A standalone mongod rejects transactions and retryable writes the same way.
    if (command.txnNumber !== undefined || command.startTransaction !== undefined || command.autocommit !== undefined) {
      fail(ErrorCode.IllegalOperation, "Transaction numbers are only allowed on a replica set member or mongos");
    }
    return handler(command, context);
  } catch (error) {
    if (!(error instanceof CommandError)) context.server.logInternalError(name, error);
    return errorReply(error, name);
  }
}
