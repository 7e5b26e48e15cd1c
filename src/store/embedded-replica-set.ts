import { readFile, writeFile, mkdir } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import type { MongoMemoryReplSet } from "mongodb-memory-server-core";

/** The embedded mongod's replica set: one member, so change streams (the commit feed) work out of the box. */
export const EMBEDDED_REPLICA_SET = "rs0";

type ReplSetOptions = NonNullable<ConstructorParameters<typeof MongoMemoryReplSet>[0]>;

/**
 * Where the embedded replica set lives under DATA_DIR: its member's files, and the port it listens on. The
 * port is kept because the replica set config stored in the member's files names its host as
 * `127.0.0.1:<port>`: restarted on another port, the member would not find itself in its own config.
 */
export function embeddedReplicaSetPaths(dataDir: string): { dbPath: string; portFile: string } {
  return { dbPath: join(dataDir, "mongo"), portFile: join(dataDir, "mongo-replica-set.json") };
}

/** MongoMemoryReplSet's options: one wiredTiger member with its files in `dbPath`, on `port` once it has one. */
export function embeddedReplicaSetOptions(dbPath: string, port: number | undefined): ReplSetOptions {
  return {
    replSet: { name: EMBEDDED_REPLICA_SET, count: 1, storageEngine: "wiredTiger" },
    instanceOpts: [{ dbPath, storageEngine: "wiredTiger", ...(port !== undefined ? { port } : {}) }],
  };
}

/** The port a previous start recorded, if any (a missing or unreadable record means a first start). */
export async function recordedPort(portFile: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(portFile, "utf8");
  } catch {
    return undefined;
  }
  const port = (JSON.parse(text) as { port?: unknown }).port;
  if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65_535)
    throw new Error(`${portFile} holds no valid port`);
  return port;
}

export async function recordPort(portFile: string, port: number): Promise<void> {
  await writeFile(portFile, `${JSON.stringify({ replicaSet: EMBEDDED_REPLICA_SET, port })}\n`);
}

/** Rejects with a clear reason when another process listens on the member's recorded port. */
export async function assertPortFree(port: number, portFile: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          `the embedded replica set's port 127.0.0.1:${port} (recorded in ${portFile}, named in its stored config) is taken (${err.code ?? err.message})`,
        ),
      ),
    );
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve()));
  });
}

export interface EmbeddedReplicaSet {
  uri: string;
  dbPath: string;
  stop(): Promise<void>;
}

/**
 * Starts (or restarts, on the same files and port) the single-node replica set. On a restart the library
 * meets "already initialized" and re-applies the stored config; a standalone dbPath of an older version is
 * turned into a replica set member by the same first start.
 */
export async function startEmbeddedReplicaSet(dataDir: string): Promise<EmbeddedReplicaSet> {
  const { dbPath, portFile } = embeddedReplicaSetPaths(dataDir);
  await mkdir(dbPath, { recursive: true });
  const port = await recordedPort(portFile);
  if (port !== undefined) await assertPortFree(port, portFile);
  const { MongoMemoryReplSet } = await import("mongodb-memory-server-core");
  const replSet = await MongoMemoryReplSet.create(embeddedReplicaSetOptions(dbPath, port));
  const started = replSet.servers[0]?.instanceInfo?.port;
  if (started !== undefined && started !== port) await recordPort(portFile, started);
  return { uri: replSet.getUri(), dbPath, stop: async () => void (await replSet.stop({ doCleanup: false })) };
}
