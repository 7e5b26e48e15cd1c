// MongoDB for the bench: MONGODB_URI when set, else the wire-protocol test server in its own process, so its
// CPU is not counted as our server's (it is reported on its own, from /proc).
import { MongoClient } from "mongodb";
import { spawnChild } from "./ipc.js";

export interface StoreServer {
  uri: string;
  description: string;
  /** The test server's pid (its CPU and RSS are read from /proc); undefined for MONGODB_URI. */
  pid?: number;
  /** The commands its clients sent so far, by name and collection (the test server only). */
  commands?: () => Promise<Record<string, number>>;
  stop(): Promise<void>;
}

export async function startStoreServer(): Promise<StoreServer> {
  const uri = process.env["MONGODB_URI"];
  if (uri) return { uri, description: "MongoDB at MONGODB_URI", stop: async () => {} };
  // The test server keeps every document in its heap: room for the 100 000 waiting tasks of the scale figures.
  const child = await spawnChild("wire-protocol test server", "bench/servers/wire-server.ts", {
    nodeArgs: ["--max-old-space-size=8192"],
  });
  return {
    uri: child.ready["uri"] as string,
    description: "the wire-protocol test server (test/support/mongo-wire-server, its own process)",
    pid: child.pid,
    commands: () => child.call<Record<string, number>>("commands"),
    stop: () => child.stop(),
  };
}

/** The bench's databases are dropped at the end (on a real MongoDB they would otherwise stay). */
export async function dropDatabase(uri: string, db: string): Promise<void> {
  const client = new MongoClient(uri);
  try {
    await client.db(db).dropDatabase();
  } finally {
    await client.close();
  }
}
