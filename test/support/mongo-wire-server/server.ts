// The TCP server: accepts driver connections (the driver opens a pool plus a monitoring
// connection), frames messages, runs commands and writes the replies.
//
// Commands run synchronously, one message at a time, so pipelined requests on one connection
// are answered in order and every command sees a consistent store (it runs to completion
// before any other command starts). The one exception is a change stream's getMore, which may
// wait for a change (awaitData): its connection holds later requests until it answers.

import net from "node:net";
import { isDocument, type Doc } from "./bson-values.js";
import { MAX_MESSAGE_SIZE_BYTES } from "./admin-commands.js";
import type { CommandContext, ServerState } from "./command-context.js";
import { Store } from "./collection-store.js";
import { ChangeStreamCursors } from "./change-streams.js";
import { OP_QUERY_COMMANDS, runAwaitableCommand, runCommand } from "./commands.js";
import { CursorManager } from "./cursors.js";
import { CommandError, ErrorCode, errorReply, fail } from "./errors.js";
import { TtlMonitor } from "./ttl-monitor.js";
import { MSG_MORE_TO_COME, MessageFramer, OP_QUERY, encodeOpMsg, encodeOpReply, parseRequest, readHeader, type Request } from "./wire-protocol.js";

export interface MongoWireServerOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Defaults to 127.0.0.1. */
  host?: string;
  /** How often expired TTL documents are deleted (mongod: 60 s; default here: 1 s). */
  ttlMonitorIntervalMs?: number;
  /** false: refuse `$changeStream` as a standalone mongod does (default true, as a replica set). */
  changeStreams?: boolean;
  /** Where protocol problems and internal errors are reported (default: stderr). */
  log?: (line: string) => void;
}

export interface MongoWireServer {
  readonly uri: string;
  readonly port: number;
  close(): Promise<void>;
}

const CURSOR_REAP_INTERVAL_MS = 60_000;

export async function startMongoWireServer(options: MongoWireServerOptions = {}): Promise<MongoWireServer> {
  const host = options.host ?? "127.0.0.1";
  const log = options.log ?? ((line: string) => process.stderr.write(`[mongo-wire-server] ${line}\n`));
  const store = new Store();
  const cursors = new CursorManager();
  const changeStreams = new ChangeStreamCursors(store.changes, options.changeStreams ?? true);
  const ttl = new TtlMonitor(store, options.ttlMonitorIntervalMs ?? 1000, (error) => log(`TTL monitor error: ${describeError(error)}`));
  const sockets = new Set<net.Socket>();
  let totalConnections = 0;
  let port = 0;

  const state: ServerState = {
    store,
    cursors,
    changeStreams,
    ttl,
    host,
    get port() {
      return port;
    },
    startedAt: new Date(),
    currentConnections: () => sockets.size,
    totalConnections: () => totalConnections,
    logInternalError: (commandName, error) => log(`internal error in '${commandName}': ${describeError(error)}`),
  };

  const server = net.createServer((socket) => {
    totalConnections++;
    sockets.add(socket);
    serveConnection(socket, state, totalConnections, log);
    socket.on("close", () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", (error) => log(`server error: ${describeError(error)}`));
  port = (server.address() as net.AddressInfo).port;
  ttl.start();
  const reaper = setInterval(() => cursors.reapIdle(), CURSOR_REAP_INTERVAL_MS);
  reaper.unref();

  const uriHost = host.includes(":") ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    uri: `mongodb://${uriHost}:${port}`,
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        ttl.stop();
        clearInterval(reaper);
        cursors.clear();
        changeStreams.clear();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}

function describeError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

function serveConnection(socket: net.Socket, state: ServerState, connectionId: number, log: (line: string) => void): void {
  socket.setNoDelay(true);
  const framer = new MessageFramer(MAX_MESSAGE_SIZE_BYTES);
  const context = (db: string): CommandContext => ({
    server: state,
    db,
    connectionId,
    clientAddress: `${socket.remoteAddress ?? "unknown"}:${socket.remotePort ?? 0}`,
  });

  // Requests that arrive while a reply is pending (a change stream's awaitData getMore) wait their turn.
  const queued: Buffer[] = [];
  let awaiting = false;
  const fatal = (error: unknown) => {
    log(`closing connection ${connectionId} after an unexpected error: ${describeError(error)}`);
    socket.destroy();
  };
  const drain = () => {
    while (!awaiting && queued.length > 0) {
      if (socket.destroyed) return;
      const message = queued.shift() as Buffer;
      let reply: Buffer | undefined | Promise<Buffer | undefined>;
      try {
        reply = handleMessage(message, context);
      } catch (error) {
        fatal(error);
        return;
      }
      if (reply instanceof Promise) {
        awaiting = true;
        reply
          .then((late) => void (late && !socket.destroyed && socket.write(late)), fatal)
          .finally(() => {
            awaiting = false;
            drain();
          });
        return;
      }
      if (reply) socket.write(reply);
    }
  };

  socket.on("data", (chunk: Buffer) => {
    try {
      queued.push(...framer.push(chunk));
    } catch (error) {
      // A corrupt length prefix means we cannot find the next message: mongod closes too.
      log(`closing connection ${connectionId}: ${describeError(error)}`);
      socket.destroy();
      return;
    }
    drain();
  });
  // Clients disconnecting abruptly (ECONNRESET...) are normal.
  socket.on("error", () => socket.destroy());
}

/** Runs one message; returns the encoded reply, or undefined when none is expected. */
function handleMessage(message: Buffer, context: (db: string) => CommandContext): Buffer | undefined | Promise<Buffer | undefined> {
  const header = readHeader(message);
  let request: Request | undefined;
  try {
    request = parseRequest(message);
  } catch (error) {
    // The message was framed correctly but its content is malformed: answer that request.
    const reply = errorReply(error, "<malformed message>");
    return header.opCode === OP_QUERY ? encodeOpReply(header.requestId, reply) : encodeOpMsg(header.requestId, reply);
  }
  if (!request) {
    // OP_COMPRESSED is never negotiated (hello advertises no compressors); legacy opcodes are
    // gone since MongoDB 6.0. There is no reply format for them: drop the connection.
    throw new Error(`unsupported opcode ${header.opCode}`);
  }

  if (request.kind === "query") {
    return encodeOpReply(header.requestId, runLegacyCommand(request, context));
  }
  const reply = runMessageCommand(request.body, context);
  const moreToCome = (request.flags & MSG_MORE_TO_COME) !== 0; // fire-and-forget (w: 0)
  if (reply instanceof Promise) return reply.then((late) => (moreToCome ? undefined : encodeReply(header.requestId, late)));
  return moreToCome ? undefined : encodeReply(header.requestId, reply);
}

function runMessageCommand(body: Doc, context: (db: string) => CommandContext): Doc | Promise<Doc> {
  const db = body.$db;
  if (typeof db !== "string") return errorReply(new CommandError(40571, "OP_MSG requests require a $db argument"), Object.keys(body)[0] ?? "");
  return runAwaitableCommand(body, context(db));
}

function runLegacyCommand(request: Extract<Request, { kind: "query" }>, context: (db: string) => CommandContext): Doc {
  const name = request.fullCollectionName;
  // Drivers may wrap the command as {$query: {...}, $readPreference: ...}.
  const command = isDocument(request.query.$query) ? request.query.$query : request.query;
  const commandName = Object.keys(command)[0] ?? "";
  try {
    if (!name.endsWith(".$cmd")) fail(ErrorCode.UnsupportedOpQueryCommand, "OP_QUERY is no longer supported for queries; use OP_MSG");
    if (!OP_QUERY_COMMANDS.has(commandName)) {
      fail(
        ErrorCode.UnsupportedOpQueryCommand,
        `Unsupported OP_QUERY command: ${commandName}. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal`,
      );
    }
  } catch (error) {
    return errorReply(error, commandName);
  }
  return runCommand(command, context(name.slice(0, -".$cmd".length)));
}

/** Encodes a reply; if that fails (a bug), the client still gets an error for its request. */
function encodeReply(requestId: number, reply: Doc): Buffer {
  try {
    return encodeOpMsg(requestId, reply);
  } catch (error) {
    return encodeOpMsg(requestId, errorReply(new Error(`could not encode the reply: ${(error as Error).message}`), "reply"));
  }
}
