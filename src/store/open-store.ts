import { MongoClient } from "mongodb";
import type { Logger } from "../observability/logger.js";
import { embeddedMongodUnavailable } from "./embedded-mongod-probe.js";
import { EMBEDDED_REPLICA_SET, startEmbeddedReplicaSet } from "./embedded-replica-set.js";
import type { IdempotencyStore } from "./idempotency-store.js";
import { FALLBACK_DESCRIPTION, memoryFallbackWarning } from "./memory-fallback.js";
import { MemoryIdempotencyStore } from "./memory-idempotency-store.js";
import { MemoryPushConfigStore } from "./memory-push-config-store.js";
import { MemoryTaskStore } from "./memory-task-store.js";
import { MongoPushConfigStore } from "./mongo-push-config-store.js";
import { MongoIdempotencyStore } from "./mongo-idempotency-store.js";
import { MemoryHostEventStore, type HostEventStore } from "./host-event-store.js";
import { MongoHostEventStore } from "./mongo-host-event-store.js";
import { MongoTaskStore } from "./mongo-task-store.js";
import type { PushConfigStore } from "./push-config-store.js";
import type { StoreSettings, TaskStoreSettings } from "./store-settings.js";
import type { TaskStore } from "./task-store.js";

export interface OpenedStore {
  store: TaskStore;
  /** Idempotency-Key records of the OpenWOP REST surface, in the same database as the tasks. */
  idempotency: IdempotencyStore;
  /** Push notification configs, their delivery cursors and dead letters, next to the tasks. */
  pushConfigs: PushConfigStore;
  /** The host's own event log (negotiation decisions), next to the tasks. */
  hostEvents: HostEventStore;
  /** One phrase for the start-up line: which store, and whether tasks survive a restart. */
  description: string;
  durable: boolean;
  /** Set when STORE=auto fell back to memory: the loud warning (memory-fallback.ts), line by line, for /readyz. */
  warning?: string[];
  stop(): Promise<void>;
}

/** `onCommand` (the bench counts store commands per task) turns on the driver's command monitoring. */
export async function connectMongoStore(
  uri: string,
  dbName: string,
  settings?: TaskStoreSettings,
  onCommand?: (event: { commandName: string; command: Record<string, unknown> }) => void,
): Promise<{
  store: MongoTaskStore;
  idempotency: MongoIdempotencyStore;
  pushConfigs: MongoPushConfigStore;
  hostEvents: MongoHostEventStore;
}> {
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: 10_000,
    appName: "openwop-a2a-host",
    monitorCommands: onCommand !== undefined,
  });
  if (onCommand) client.on("commandStarted", onCommand);
  await client.connect();
  const store = new MongoTaskStore(client, client.db(dbName), {
    ...(settings ? { limits: settings.limits } : {}),
    ...(settings?.killAfterEventsWriteOf ? { killAfterEventsWriteOf: settings.killAfterEventsWriteOf } : {}),
  });
  const idempotency = new MongoIdempotencyStore(client.db(dbName));
  await store.init();
  const pushConfigs = new MongoPushConfigStore(client.db(dbName));
  await idempotency.init();
  await pushConfigs.init();
  const hostEvents = new MongoHostEventStore(client.db(dbName));
  await hostEvents.init();
  return { store, idempotency, pushConfigs, hostEvents };
}

/**
 * MONGODB_URI if given; otherwise (STORE=auto) an embedded real mongod, a single-node replica set (so the commit
 * feed gets change streams), with its data under DATA_DIR; if that cannot start (no binary and no network to
 * fetch one, its recorded port taken), the in-memory store with a loud warning (memory-fallback.ts).
 */
export async function openStore(config: StoreSettings & { dataDir: string }, logger: Logger): Promise<OpenedStore> {
  if (config.store === "memory") return memoryStore(config.taskStore);
  if (config.mongodbUri) {
    const { store, idempotency, pushConfigs, hostEvents } = await connectMongoStore(
      config.mongodbUri,
      config.mongodbDb,
      config.taskStore,
    );
    return {
      store,
      idempotency,
      pushConfigs,
      hostEvents,
      description: `MongoDB (${redactUri(config.mongodbUri)}, database ${config.mongodbDb}; ${store.writePath})`,
      durable: true,
      stop: () => store.close(),
    };
  }
  try {
    const unavailable = await embeddedMongodUnavailable();
    if (unavailable) throw new Error(unavailable);
    const mongod = await startEmbeddedReplicaSet(config.dataDir);
    const { store, idempotency, pushConfigs, hostEvents } = await connectMongoStore(
      mongod.uri,
      config.mongodbDb,
      config.taskStore,
    ).catch(async (err: unknown) => {
      await mongod.stop();
      throw err;
    });
    return {
      store,
      idempotency,
      pushConfigs,
      hostEvents,
      description: `embedded MongoDB, single-node replica set ${EMBEDDED_REPLICA_SET} (change streams on; data in ${mongod.dbPath}, database ${config.mongodbDb}; ${store.writePath})`,
      durable: true,
      stop: async () => {
        await store.close();
        await mongod.stop();
      },
    };
  } catch (err) {
    const reason = (err as Error).message.split("\n")[0] ?? "unknown";
    const warning = memoryFallbackWarning(reason);
    for (const line of warning) logger.warn({ store: "memory", durable: false }, line);
    return { ...memoryStore(config.taskStore), description: FALLBACK_DESCRIPTION, warning };
  }
}

function memoryStore(settings: TaskStoreSettings): OpenedStore {
  const store = new MemoryTaskStore(
    undefined,
    settings.limits,
    settings.memoryRetentionMs,
    settings.memoryMaxTerminalTasks,
  );
  return {
    store,
    idempotency: new MemoryIdempotencyStore(),
    pushConfigs: new MemoryPushConfigStore(),
    hostEvents: new MemoryHostEventStore(),
    description: "in-memory store (not durable: tasks do not survive a restart)",
    durable: false,
    stop: () => store.close(),
  };
}

export function redactUri(uri: string): string {
  return uri.replace(/\/\/[^@/]*@/, "//***@");
}
