// Handshake, server information, sessions, and database / collection management commands.

import os from "node:os";
import { BSON } from "mongodb";
import { isDocument, isNumeric, toDouble, type Doc } from "./bson-values.js";
import {
  collectionArgument,
  cursorBatchSize,
  optionalBoolean,
  optionalDocument,
  rejectCollation,
  requireAdminDatabase,
  type CommandContext,
  type CommandHandler,
} from "./command-context.js";
import { MAX_BSON_OBJECT_SIZE, validateDatabaseName } from "./collection-store.js";
import { ErrorCode, fail } from "./errors.js";
import { compileFilter } from "./query-matcher.js";

export const SERVER_VERSION = "8.0.0";
/** Wire version 25 is MongoDB 8.0 (the first with the client-level bulkWrite command). */
export const MAX_WIRE_VERSION = 25;
export const MAX_MESSAGE_SIZE_BYTES = 48_000_000;
const MAX_WRITE_BATCH_SIZE = 100_000;
const LOGICAL_SESSION_TIMEOUT_MINUTES = 30;

/** The address this server calls itself in hello (`me`, `hosts`, `primary`), as the driver spells it. */
export function selfAddress(context: CommandContext): string {
  const host = context.server.host.includes(":") ? `[${context.server.host}]` : context.server.host;
  return `${host}:${context.server.port}`;
}

/** A fixed election: this primary was elected once (term 1) and stays primary. */
const ELECTION_ID = new BSON.ObjectId("7fffffff0000000000000001");

/**
 * The reply to hello / isMaster: the primary of a one-node replica set (by default), or a
 * standalone mongod. A replica set member reports a `topologyVersion`, so the driver monitors it
 * with the streaming protocol (an awaitable hello, see server.ts); a standalone one has none.
 */
function hello(legacy: boolean): CommandHandler {
  return (command, context) => {
    const { replicaSet } = context.server;
    const me = selfAddress(context);
    const now = new Date();
    const opTime = {
      ts: new BSON.Timestamp({ t: Math.floor(now.getTime() / 1000), i: 1 }),
      t: BSON.Long.fromNumber(1),
    };
    const member: Doc = replicaSet
      ? {
          topologyVersion: {
            processId: context.server.topologyVersion.processId,
            counter: context.server.topologyVersion.counter,
          },
          hosts: [me],
          setName: replicaSet,
          setVersion: 1,
          [legacy ? "ismaster" : "isWritablePrimary"]: true,
          secondary: false,
          primary: me,
          me,
          electionId: ELECTION_ID,
          lastWrite: { opTime, lastWriteDate: now, majorityOpTime: opTime, majorityWriteDate: now },
        }
      : { [legacy ? "ismaster" : "isWritablePrimary"]: true };
    return {
      ...(command.helloOk === true ? { helloOk: true } : {}),
      ...member,
      maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
      maxMessageSizeBytes: MAX_MESSAGE_SIZE_BYTES,
      maxWriteBatchSize: MAX_WRITE_BATCH_SIZE,
      localTime: now,
      logicalSessionTimeoutMinutes: LOGICAL_SESSION_TIMEOUT_MINUTES,
      connectionId: context.connectionId,
      minWireVersion: 0,
      maxWireVersion: MAX_WIRE_VERSION,
      readOnly: false,
      ok: 1,
    };
  };
}

/** Whether a hello asks to wait for a topology change (the streaming protocol's awaitable hello). */
export function isAwaitableHello(command: Doc, context: CommandContext): number | undefined {
  const name = Object.keys(command)[0];
  if (name !== "hello" && name !== "isMaster" && name !== "ismaster") return undefined;
  const requested = command.topologyVersion;
  if (!context.server.replicaSet || !isDocument(requested) || !isNumeric(command.maxAwaitTimeMS)) return undefined;
  const current = context.server.topologyVersion;
  const sameProcess = requested.processId instanceof BSON.ObjectId && requested.processId.equals(current.processId);
  const counter = requested.counter;
  const sameCounter =
    (counter instanceof BSON.Long ? counter.toNumber() : Number(counter)) === current.counter.toNumber();
  // A client that knows an older topology is answered at once, as mongod does.
  return sameProcess && sameCounter ? Math.max(0, toDouble(command.maxAwaitTimeMS)) : undefined;
}

function configureFailPoint(command: Doc, context: CommandContext): Doc {
  requireAdminDatabase("configureFailPoint", context);
  return context.server.failPoints.configure(command);
}

function buildInfo(): Doc {
  return {
    version: SERVER_VERSION,
    gitVersion: "0000000000000000000000000000000000000000",
    modules: [],
    allocator: "system",
    javascriptEngine: "none",
    sysInfo: "deprecated",
    versionArray: [8, 0, 0, 0],
    openssl: { running: "disabled", compiled: "disabled" },
    buildEnvironment: {},
    bits: 64,
    debug: false,
    maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
    storageEngines: ["wiredTiger"],
    // Not in mongod's reply: lets a client tell it is talking to this test server.
    wireProtocolTestServer: true,
    ok: 1,
  };
}

function parameters(context: CommandContext): Doc {
  return {
    featureCompatibilityVersion: { version: "8.0" },
    ttlMonitorEnabled: context.server.ttl.enabled,
    ttlMonitorSleepSecs: new BSON.Int32(Math.max(1, Math.round(context.server.ttl.interval / 1000))),
    maxBSONDepth: new BSON.Int32(200),
    authenticationMechanisms: [],
  };
}

function getParameter(command: Doc, context: CommandContext): Doc {
  requireAdminDatabase("getParameter", context);
  const all = parameters(context);
  if (command.getParameter === "*") return { ...all, ok: 1 };
  const reply: Doc = {};
  for (const name of Object.keys(command)) {
    if (name === "getParameter" || name.startsWith("$") || name === "lsid" || name === "comment") continue;
    if (!Object.hasOwn(all, name)) fail(ErrorCode.InvalidOptions, `no option found to get`);
    reply[name] = all[name];
  }
  return { ...reply, ok: 1 };
}

/** Supports the TTL monitor knobs, which tests want to turn. */
function setParameter(command: Doc, context: CommandContext): Doc {
  requireAdminDatabase("setParameter", context);
  const ttl = context.server.ttl;
  const reply: Doc = {};
  for (const [name, value] of Object.entries(command)) {
    if (name === "setParameter" || name.startsWith("$") || name === "lsid" || name === "comment") continue;
    if (name === "ttlMonitorEnabled") {
      reply.was = ttl.enabled;
      ttl.enabled = value === true;
    } else if (name === "ttlMonitorSleepSecs" && isNumeric(value) && toDouble(value) > 0) {
      reply.was = new BSON.Int32(Math.round(ttl.interval / 1000));
      ttl.setInterval(toDouble(value) * 1000);
    } else {
      fail(
        ErrorCode.InvalidOptions,
        `attempted to set unrecognized parameter [${name}], use help:true to see options `,
      );
    }
  }
  return { ...reply, ok: 1 };
}

function serverStatus(_command: Doc, context: CommandContext): Doc {
  const stats = context.server.store.queryStats;
  const uptimeMillis = Date.now() - context.server.startedAt.getTime();
  return {
    host: `${os.hostname()}:${context.server.port}`,
    version: SERVER_VERSION,
    process: "mongod",
    pid: BSON.Long.fromNumber(process.pid),
    uptime: new BSON.Double(Math.floor(uptimeMillis / 1000)),
    uptimeMillis: BSON.Long.fromNumber(uptimeMillis),
    uptimeEstimate: BSON.Long.fromNumber(Math.floor(uptimeMillis / 1000)),
    localTime: new Date(),
    connections: {
      current: context.server.currentConnections(),
      available: 1_000_000 - context.server.currentConnections(),
      totalCreated: context.server.totalConnections(),
    },
    metrics: {
      cursor: { open: { total: BSON.Long.fromNumber(context.server.cursors.size) } },
      queryExecutor: {
        scanned: BSON.Long.fromNumber(stats.scanned),
        scannedObjects: BSON.Long.fromNumber(stats.scannedObjects),
        collectionScans: { total: BSON.Long.fromNumber(stats.collectionScans) },
      },
    },
    ok: 1,
  };
}

function hostInfo(): Doc {
  return {
    system: {
      currentTime: new Date(),
      hostname: os.hostname(),
      cpuAddrSize: 64,
      memSizeMB: BSON.Long.fromNumber(Math.round(os.totalmem() / 1024 / 1024)),
      numCores: os.cpus().length,
      cpuArch: os.arch(),
      numaEnabled: false,
    },
    os: { type: os.type(), name: os.type(), version: os.release() },
    extra: {},
    ok: 1,
  };
}

function listDatabases(command: Doc, context: CommandContext): Doc {
  requireAdminDatabase("listDatabases", context);
  const store = context.server.store;
  const filter = compileFilter(optionalDocument(command, "listDatabases", "filter"));
  const nameOnly = optionalBoolean(command, "listDatabases", "nameOnly", false);
  let totalSize = 0;
  const databases = store
    .databaseNames()
    .map((name) => {
      const sizeOnDisk = store.collections(name).reduce((sum, collection) => sum + collection.dataSize(), 0) || 4096;
      return { name, sizeOnDisk: BSON.Long.fromNumber(sizeOnDisk), empty: false };
    })
    .filter((entry) => filter(entry));
  if (nameOnly) return { databases: databases.map(({ name }) => ({ name })), ok: 1 };
  for (const entry of databases) totalSize += entry.sizeOnDisk.toNumber();
  return {
    databases,
    totalSize: BSON.Long.fromNumber(totalSize),
    totalSizeMb: BSON.Long.fromNumber(Math.floor(totalSize / 1024 / 1024)),
    ok: 1,
  };
}

function dropDatabase(_command: Doc, context: CommandContext): Doc {
  validateDatabaseName(context.db);
  context.server.store.dropDatabase(context.db);
  return { dropped: context.db, ok: 1 };
}

function dbStats(_command: Doc, context: CommandContext): Doc {
  const collections = context.server.store.collections(context.db);
  const objects = collections.reduce((sum, collection) => sum + collection.count, 0);
  const dataSize = collections.reduce((sum, collection) => sum + collection.dataSize(), 0);
  const indexes = collections.reduce((sum, collection) => sum + collection.indexes.length, 0);
  return {
    db: context.db,
    collections: collections.length,
    views: 0,
    objects,
    avgObjSize: objects === 0 ? 0 : dataSize / objects,
    dataSize,
    storageSize: dataSize,
    indexes,
    indexSize: 0,
    totalSize: dataSize,
    scaleFactor: 1,
    ok: 1,
  };
}

function listCollections(command: Doc, context: CommandContext): Doc {
  const filter = compileFilter(optionalDocument(command, "listCollections", "filter"));
  const nameOnly = optionalBoolean(command, "listCollections", "nameOnly", false);
  const entries = context.server.store
    .collections(context.db)
    .map((collection): Doc => ({
      name: collection.name,
      type: "collection",
      options: collection.options,
      info: { readOnly: false, uuid: collection.uuid },
      idIndex: { v: new BSON.Int32(2), key: { _id: new BSON.Int32(1) }, name: "_id_" },
    }))
    .filter((entry) => filter(entry))
    .map((entry) => (nameOnly ? { name: entry.name, type: entry.type } : entry));
  const ns = `${context.db}.$cmd.listCollections`;
  return { cursor: context.server.cursors.openCursor(ns, entries, cursorBatchSize(command, "listCollections")), ok: 1 };
}

/** Options of `create` that would change behaviour the test server does not implement. */
const UNSUPPORTED_CREATE_OPTIONS = [
  "capped",
  "viewOn",
  "pipeline",
  "timeseries",
  "clusteredIndex",
  "validator",
  "changeStreamPreAndPostImages",
  "encryptedFields",
];

function create(command: Doc, context: CommandContext): Doc {
  const name = collectionArgument(command, "create", context);
  for (const option of UNSUPPORTED_CREATE_OPTIONS) {
    if (command[option] !== undefined && command[option] !== false) {
      fail(ErrorCode.BadValue, `create option '${option}' is not supported by the wire-protocol test server`);
    }
  }
  rejectCollation(command.collation);
  // Since MongoDB 7.0, creating a collection that exists with identical options succeeds. Every
  // collection here has the default options (others are rejected above), so that is always the case.
  if (!context.server.store.getCollection(context.db, name))
    context.server.store.createCollection(context.db, name, {});
  return { ok: 1 };
}

function drop(command: Doc, context: CommandContext): Doc {
  const name = collectionArgument(command, "drop", context);
  const dropped = context.server.store.dropCollection(context.db, name);
  // Since 7.0 dropping a collection that does not exist succeeds.
  if (!dropped) return { ok: 1 };
  return { nIndexesWas: dropped.indexes.length, ns: dropped.ns, ok: 1 };
}

function ok(): Doc {
  return { ok: 1 };
}

export const adminCommands: Record<string, CommandHandler> = {
  hello: hello(false),
  isMaster: hello(true),
  ismaster: hello(true),
  ping: ok,
  configureFailPoint,
  buildInfo,
  buildinfo: buildInfo,
  getParameter,
  setParameter,
  serverStatus,
  hostInfo,
  whatsmyuri: (_command, context) => ({ you: context.clientAddress, ok: 1 }),
  connectionStatus: () => ({ authInfo: { authenticatedUsers: [], authenticatedUserRoles: [] }, ok: 1 }),
  endSessions: ok,
  killAllSessions: ok,
  killSessions: ok,
  refreshSessions: ok,
  startSession: () => ({ id: { id: new BSON.UUID() }, timeoutMinutes: LOGICAL_SESSION_TIMEOUT_MINUTES, ok: 1 }),
  listDatabases,
  dropDatabase,
  dbStats,
  listCollections,
  create,
  drop,
};
