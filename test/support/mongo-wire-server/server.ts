// The TCP server: accepts driver connections (the driver opens a pool plus a monitoring
// connection), frames messages, runs commands and writes the replies.
//
// Commands run synchronously, one message at a time, so pipelined requests on one connection
// are answered in order and every command sees a consistent store (it runs to completion
// before any other command starts). The one exception is a change stream's getMore, which may
// wait for a change (awaitData): its connection holds later requests until it answers; so
// does a command a fail point blocks (blockConnection), and the monitoring connection's
// awaitable hello, which the driver streams (exhaust: the server keeps replying with
// moreToCome every maxAwaitTimeMS).
//
// By default the server is the primary of a one-node replica set named "rs0" (so the driver
// sends retryable writes and opens change streams as against a real deployment); the
// connection string needs no options (the driver discovers the set from hello).

import net from "node:net";
import { BSON } from "mongodb";
import { integerValue, isDocument, type Doc } from "./bson-values.js";
import { MAX_MESSAGE_SIZE_BYTES, isAwaitableHello } from "./admin-commands.js";
import type { CommandContext, ServerState } from "./command-context.js";
import { Store } from "./collection-store.js";
import { ChangeStreamCursors } from "./change-streams.js";
import { OP_QUERY_COMMANDS, errorLabelsFor, runAwaitableCommand, runCommand } from "./commands.js";
import { CursorManager } from "./cursors.js";
import { CloseConnection, CommandError, ErrorCode, codeNameFor, errorReply, fail } from "./errors.js";
import { FailPoints, type CommandFault } from "./fail-points.js";
import { RetryableWrites } from "./retryable-writes.js";
import { TtlMonitor } from "./ttl-monitor.js";
import {
  MSG_EXHAUST_ALLOWED,
  MSG_MORE_TO_COME,
  MessageFramer,
  OP_QUERY,
  encodeOpMsg,
  encodeOpReply,
  parseRequest,
  readHeader,
  type Request,
} from "./wire-protocol.js";

export interface MongoWireServerOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Defaults to 127.0.0.1. */
  host?: string;
  /** How often expired TTL documents are deleted (mongod: 60 s; default here: 1 s). */
  ttlMonitorIntervalMs?: number;
  /**
   * The name of the one-node replica set this server is the primary of (default "rs0"), or false
   * for a standalone mongod (no retryable writes; no change streams unless `changeStreams`).
   */
  replicaSet?: string | false;
  /** false: refuse `$changeStream` as a standalone mongod does (default: true for a replica set). With it false and no `replicaSet`, the server is a standalone one. */
  changeStreams?: boolean;
  /** Where protocol problems and internal errors are reported (default: stderr). */
  log?: (line: string) => void;
  /** Hears every OP_MSG command before it runs (the bench counts a client's commands here, not in the client). */
  onCommand?: (body: Doc) => void;
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
  const replicaSet = options.replicaSet ?? (options.changeStreams === false ? false : "rs0");
  const changeStreams = new ChangeStreamCursors(store.changes, options.changeStreams ?? replicaSet !== false);
  const failPoints = new FailPoints();
  const ttl = new TtlMonitor(store, options.ttlMonitorIntervalMs ?? 1000, (error) =>
    log(`TTL monitor error: ${describeError(error)}`),
  );
  const sockets = new Set<net.Socket>();
  let totalConnections = 0;
  let port = 0;

  const state: ServerState = {
    store,
    cursors,
    changeStreams,
    ttl,
    failPoints,
    retryableWrites: new RetryableWrites(),
    replicaSet: replicaSet === false ? undefined : replicaSet,
    topologyVersion: { processId: new BSON.ObjectId(), counter: BSON.Long.ZERO },
    host,
    get port() {
      return port;
    },
    startedAt: new Date(),
    currentConnections: () => sockets.size,
    totalConnections: () => totalConnections,
    logInternalError: (commandName, error) => log(`internal error in '${commandName}': ${describeError(error)}`),
    ...(options.onCommand ? { onCommand: options.onCommand } : {}),
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
        failPoints.clear();
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

/** What one connection remembers between commands. */
interface ConnectionState {
  readonly socket: net.Socket;
  /** From the handshake's `client.application.name`; failCommand's `appName` matches it. */
  appName?: string;
}

/** An exhaust stream: the replies the server sends, one after another, without further requests. */
interface ExhaustStream {
  readonly exhaust: true;
  next(): Promise<Buffer | undefined>;
}

type Reply = Buffer | undefined | Promise<Buffer | undefined> | ExhaustStream;

function serveConnection(
  socket: net.Socket,
  state: ServerState,
  connectionId: number,
  log: (line: string) => void,
): void {
  socket.setNoDelay(true);
  const framer = new MessageFramer(MAX_MESSAGE_SIZE_BYTES);
  const connection: ConnectionState = { socket };
  const context = (db: string): CommandContext => ({
    server: state,
    db,
    connectionId,
    clientAddress: `${socket.remoteAddress ?? "unknown"}:${socket.remotePort ?? 0}`,
    appName: connection.appName,
  });

  // Requests that arrive while a reply is pending (a change stream's awaitData getMore) wait their turn.
  const queued: Buffer[] = [];
  let awaiting = false;
  const fatal = (error: unknown) => {
    // A fail point's closeConnection: the client sees the network error it asked for.
    if (!(error instanceof CloseConnection))
      log(`closing connection ${connectionId} after an unexpected error: ${describeError(error)}`);
    socket.destroy();
  };
  const stream = async (exhaust: ExhaustStream) => {
    for (;;) {
      const next = await exhaust.next();
      if (!next || socket.destroyed) return;
      socket.write(next);
    }
  };
  const drain = () => {
    while (!awaiting && queued.length > 0) {
      if (socket.destroyed) return;
      const message = queued.shift() as Buffer;
      let reply: Reply;
      try {
        reply = handleMessage(message, context, connection);
      } catch (error) {
        fatal(error);
        return;
      }
      if (reply instanceof Promise || (reply !== undefined && !Buffer.isBuffer(reply))) {
        awaiting = true;
        const pending =
          reply instanceof Promise
            ? reply.then((late) => void (late && !socket.destroyed && socket.write(late)))
            : stream(reply);
        pending.then(undefined, fatal).finally(() => {
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
function handleMessage(message: Buffer, context: (db: string) => CommandContext, connection: ConnectionState): Reply {
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
    rememberAppName(isDocument(request.query.$query) ? request.query.$query : request.query, connection);
    return encodeOpReply(header.requestId, runLegacyCommand(request, context));
  }
  rememberAppName(request.body, connection);
  const moreToCome = (request.flags & MSG_MORE_TO_COME) !== 0; // fire-and-forget (w: 0)
  const awaitable =
    typeof request.body.$db === "string"
      ? awaitableHello(
          request.body,
          context(request.body.$db),
          header.requestId,
          (request.flags & MSG_EXHAUST_ALLOWED) !== 0,
          connection,
        )
      : undefined;
  if (awaitable) return awaitable;
  const reply = runMessageCommand(request.body, context, connection);
  if (reply instanceof Promise)
    return reply.then((late) => (moreToCome ? undefined : encodeReply(header.requestId, late)));
  return moreToCome ? undefined : encodeReply(header.requestId, reply);
}

function rememberAppName(command: Doc, connection: ConnectionState): void {
  const client = command.client;
  const application = isDocument(client) ? client.application : undefined;
  if (isDocument(application) && typeof application.name === "string") connection.appName = application.name;
}

/** Resolves after `ms`, or as soon as the connection closes. */
function waitOnConnection(ms: number, connection: ConnectionState): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      connection.socket.off("close", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    connection.socket.once("close", done);
  });
}

/**
 * The streaming protocol's hello (topologyVersion + maxAwaitTimeMS, from the driver's monitor):
 * the topology never changes here, so each reply comes after maxAwaitTimeMS; with exhaustAllowed
 * the server keeps sending one every maxAwaitTimeMS (flag moreToCome) until the connection closes.
 */
function awaitableHello(
  body: Doc,
  context: CommandContext,
  requestId: number,
  exhaustAllowed: boolean,
  connection: ConnectionState,
): Reply {
  const waitMs = isAwaitableHello(body, context);
  if (waitMs === undefined) return undefined;
  const { topologyVersion: _tv, maxAwaitTimeMS: _max, ...plain } = body;
  const answer = async (responseTo: number): Promise<Buffer | undefined> => {
    await waitOnConnection(waitMs, connection);
    if (connection.socket.destroyed) return undefined;
    return encodeOpMsg(responseTo, runCommand(plain, context), exhaustAllowed ? MSG_MORE_TO_COME : 0);
  };
  if (!exhaustAllowed) return answer(requestId);
  let responseTo = requestId;
  return {
    exhaust: true,
    async next() {
      const reply = await answer(responseTo);
      if (reply) responseTo = reply.readInt32LE(4); // the next reply answers this one
      return reply;
    },
  };
}

function runMessageCommand(
  body: Doc,
  context: (db: string) => CommandContext,
  connection: ConnectionState,
): Doc | Promise<Doc> {
  const db = body.$db;
  if (typeof db !== "string")
    return errorReply(new CommandError(40571, "OP_MSG requests require a $db argument"), Object.keys(body)[0] ?? "");
  const commandContext = context(db);
  commandContext.server.onCommand?.(body);
  if (Object.keys(body)[0] === "waitForFailPoint") {
    return commandContext.server.failPoints
      .waitFor(body)
      .catch((error: unknown) => errorReply(error, "waitForFailPoint"));
  }
  const fault = commandContext.server.failPoints.commandFault(body, db, connection.appName);
  if (!fault) return runAwaitableCommand(body, commandContext);
  if (fault.blockTimeMs !== undefined) {
    const blockMs = fault.blockTimeMs;
    return waitOnConnection(blockMs, connection).then(() => runFaulted(body, commandContext, fault));
  }
  return runFaulted(body, commandContext, fault);
}

/** A command the failCommand fail point caught: closed on, failed, or run with a writeConcernError. */
function runFaulted(body: Doc, context: CommandContext, fault: CommandFault): Doc | Promise<Doc> {
  if (fault.closeConnection) throw new CloseConnection("failCommand fail point");
  if (fault.error) {
    const { code } = fault.error;
    const labels = fault.error.labels ?? errorLabelsFor(body, code, context);
    return {
      ok: 0,
      errmsg: "Failing command via 'failCommand' failpoint",
      code,
      codeName: codeNameFor(code),
      ...(labels.length > 0 ? { errorLabels: labels } : {}),
    };
  }
  if (fault.writeConcernError) {
    const wce = fault.writeConcernError;
    const addConcernError = (reply: Doc): Doc => {
      if (reply.ok !== 1) return reply;
      const code = integerValue(wce.code) ?? 0;
      const labels = errorLabelsFor(body, code, context);
      return { ...reply, writeConcernError: wce, ...(labels.length > 0 ? { errorLabels: labels } : {}) };
    };
    const reply = runAwaitableCommand(body, context);
    return reply instanceof Promise ? reply.then(addConcernError) : addConcernError(reply);
  }
  return runAwaitableCommand(body, context);
}
function runLegacyCommand(request: Extract<Request, { kind: "query" }>, context: (db: string) => CommandContext): Doc {
  const name = request.fullCollectionName;
  // Drivers may wrap the command as {$query: {...}, $readPreference: ...}.
  const command = isDocument(request.query.$query) ? request.query.$query : request.query;
  const commandName = Object.keys(command)[0] ?? "";
  try {
    if (!name.endsWith(".$cmd"))
      fail(ErrorCode.UnsupportedOpQueryCommand, "OP_QUERY is no longer supported for queries; use OP_MSG");
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
    return encodeOpMsg(
      requestId,
      errorReply(new Error(`could not encode the reply: ${(error as Error).message}`), "reply"),
    );
  }
}
