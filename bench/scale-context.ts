// What the parts of the scale figures (bench/scale.ts) share: the processes they drive and the store's counters.
import type { MongoClient } from "mongodb";
import type { BenchChild } from "./lib/ipc.js";
import type { StoreServer } from "./lib/store-server.js";

/** A task the load generator created or sent to, with the A2A state it answered. */
export type Sent = { taskId: string; state: string };

export const commandTotal = async (server: BenchChild) =>
  Object.values(await server.call<Record<string, number>>("storeCommands")).reduce((a, b) => a + b, 0);

/** The store, our server and the load generator of one scale run. */
export interface Ctx {
  store: StoreServer;
  admin: MongoClient;
  db: string;
  load: BenchChild;
  server: BenchChild;
  baseUrl: string;
}
