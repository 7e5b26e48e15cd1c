// The capacity guide's figures (`npm run bench -- capacity`): (a) tasks/s and CPU per task with 1, 2 and 4
// instances on one store; (b) what one task costs the store: commands, BSON bytes and index entries, for an echo
// task and an approval task answered, and from them the storage one million tasks take. Method: README.md,
// "Capacity"; the guide: docs/operating.md, "Sizing".
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { BSON, MongoClient, type Document } from "mongodb";
import { instanceLauncher, measureThroughput, type Instance } from "./multi.js";
import { dropDatabase, type StoreServer } from "./lib/store-server.js";
import { round2, table } from "./lib/summary.js";

export interface CapacityOptions {
  instanceCounts: number[];
  roundMs: number;
  warmupMs: number;
  rounds: number;
  concurrency: number;
  /** Tasks of each kind for the storage figures. */
  storageTasks: number;
}

const LEASE = { leaseTtlMs: 10_000, leaseHeartbeatMs: 2_500 };

/** A task as the 0.3 JSON-RPC binding answers it: the two fields this bench reads. */
interface WireTask {
  id: string;
  status: { state: string };
}

async function rpc(url: string, method: string, params: unknown): Promise<WireTask> {
  const res = await fetch(`${url}/a2a/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
  });
  const body = (await res.json()) as { result?: WireTask; error?: unknown };
  if (!body.result) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

const message = (parts: unknown[], more: Record<string, unknown>) => ({
  kind: "message",
  messageId: randomUUID(),
  role: "user",
  parts,
  ...more,
});

/** Every value at a dotted path; an array on the way fans out (a multikey index has an entry per element). */
function valuesAt(value: unknown, path: string[]): unknown[] {
  if (path.length === 0) return Array.isArray(value) ? value : [value];
  if (Array.isArray(value)) return value.flatMap((v) => valuesAt(v, path));
  if (value === null || typeof value !== "object" || !(path[0]! in value)) return [];
  return valuesAt((value as Record<string, unknown>)[path[0]!], path.slice(1));
}

/**
 * How many entries one document puts in one index: none when a partial filter (the store uses `$exists` and
 * `$type: "string"`) or sparseness leaves it out, one per value otherwise (a missing field is indexed as null).
 */
function indexEntries(index: Document, doc: Document): number {
  const fields = Object.keys(index["key"] as Document).map((f) => f.split("."));
  const filter = (index["partialFilterExpression"] ?? {}) as Record<string, Document>;
  for (const [field, condition] of Object.entries(filter)) {
    const values = valuesAt(doc, field.split("."));
    if ("$exists" in condition && values.length > 0 !== condition["$exists"]) return 0;
    if ("$type" in condition && !(condition["$type"] === "string" && values.some((v) => typeof v === "string")))
      return 0;
    if (!("$exists" in condition) && !("$type" in condition))
      throw new Error(`a partial filter this bench cannot read: ${JSON.stringify(filter)}`);
  }
  const counts = fields.map((path) => valuesAt(doc, path).length);
  if (index["sparse"] === true && counts.every((c) => c === 0)) return 0;
  return counts.reduce((product, c) => product * Math.max(c, 1), 1);
}

/** The store's share of one task of each kind: commands sent, then bytes and index entries left behind. */
async function measureStorage(options: CapacityOptions, store: StoreServer, instance: Instance, db: string) {
  const kinds = {
    echo: async () => {
      const task = await rpc(instance.url, "message/send", {
        message: message([{ kind: "text", text: "a short request of about sixty characters, as a user types" }], {
          metadata: { skillId: "echo" },
        }),
      });
      if (task.status.state !== "completed") throw new Error(`echo ended ${task.status.state}`);
    },
    "approval, answered": async () => {
      const waiting = await rpc(instance.url, "message/send", {
        message: message([{ kind: "text", text: "ship the release" }], { metadata: { skillId: "approval-gate" } }),
      });
      const done = await rpc(instance.url, "message/send", {
        message: message([{ kind: "data", data: { action: "accept" } }], { taskId: waiting.id }),
      });
      if (done.status.state !== "completed") throw new Error(`approval ended ${done.status.state}`);
    },
  };
  const client = await MongoClient.connect(store.uri);
  const rows = [];
  try {
    for (const [kind, run] of Object.entries(kinds)) {
      // Each kind counts alone: the documents go, the collections and their indexes stay.
      for (const { name } of await client.db(db).listCollections().toArray())
        await client.db(db).collection(name).deleteMany({});
      const counts = () => instance.child.call<Record<string, number>>("storeCommands");
      const before = await counts();
      const startedAt = Date.now();
      for (let i = 0; i < options.storageTasks; i++) await run();
      // The writes an answer did not wait for (the log's expiry stamp) land before anything is counted.
      await new Promise((r) => setTimeout(r, 500));
      const elapsedMs = Date.now() - startedAt;
      const after = await counts();
      // The lease, timer and push polls run on their own clock whatever the traffic: the same time spent idle
      // shows what they sent, and that is taken off.
      await new Promise((r) => setTimeout(r, elapsedMs));
      const idle = await counts();
      const commands: Record<string, number> = {};
      for (const [name, n] of Object.entries(after)) {
        const polls = (idle[name] ?? 0) - n;
        const delta = n - (before[name] ?? 0) - polls;
        const perTask = round2(delta / options.storageTasks);
        // Fewer than 0.005 a task (a getMore, a rare retry) is left out of the figure.
        if (perTask <= 0) continue;
        // A client bulkWrite names no collection ("bulkWrite 1"): it writes the task's events and head at once.
        const label =
          name === "bulkWrite 1" ? "bulkWrite tasks+task_events" : name.startsWith("getMore") ? "getMore" : name;
        commands[label] = (commands[label] ?? 0) + perTask;
      }
      const collections = [];
      for (const { name } of await client.db(db).listCollections().toArray()) {
        const documents = await client.db(db).collection(name).find({}).toArray();
        if (documents.length === 0) continue;
        const indexes = await client.db(db).collection(name).listIndexes().toArray();
        const bytes = documents.reduce((sum, d) => sum + BSON.calculateObjectSize(d), 0);
        const entries = indexes.reduce(
          (sum, index) => sum + documents.reduce((n, d) => n + indexEntries(index, d), 0),
          0,
        );
        collections.push({
          collection: name,
          documentsPerTask: round2(documents.length / options.storageTasks),
          bsonBytesPerTask: Math.round(bytes / options.storageTasks),
          indexes: indexes.length,
          indexEntriesPerTask: round2(entries / options.storageTasks),
        });
      }
      const bytes = collections.reduce((sum, c) => sum + c.bsonBytesPerTask, 0);
      const entries = collections.reduce((sum, c) => sum + c.indexEntriesPerTask, 0);
      rows.push({
        kind,
        tasks: options.storageTasks,
        storeCommandsPerTask: commands,
        collections,
        bsonBytesPerTask: bytes,
        indexEntriesPerTask: round2(entries),
        bsonGiBPerMillionTasks: round2((bytes * 1e6) / 2 ** 30),
      });
    }
  } finally {
    await client.close();
  }
  return rows;
}

export async function runCapacity(
  options: CapacityOptions,
  store: StoreServer,
): Promise<{ figures: Record<string, unknown>; printed: string }> {
  const launcher = instanceLauncher(store, LEASE);
  try {
    const throughput = await measureThroughput(options, store, launcher.start, launcher.stop, launcher.own);
    console.log(`  (b) the store's share of one task, ${options.storageTasks} tasks of each kind…`);
    const db = `bench_capacity_${randomUUID().slice(0, 8)}`;
    const storageLauncher = instanceLauncher(store, LEASE, { BENCH_COUNT_COMMANDS: "1" });
    const instance = await storageLauncher.start(db, "s");
    let storage;
    try {
      storage = await measureStorage(options, store, instance, db);
    } finally {
      await storageLauncher.stopAll();
      await dropDatabase(store.uri, db);
    }
    const perInstance = throughput.rows.map((r) => ({
      instances: r.instances,
      tasksPerSec: r.reqPerSec,
      tasksPerSecPerInstance: round2(r.reqPerSec / r.instances),
      serverCpuMsPerTask: r.serverCpuSecPer1kTasks,
      storeCpuMsPerTask: r.storeServerCpuSecPer1kTasks,
      p50Ms: r.p50Ms,
      p99Ms: r.p99Ms,
      errors: r.errors,
    }));
    const figures = { loadAverageAtEnd: loadavg().map(round2), throughput: perInstance, storage };
    return { figures, printed: print(options, perInstance, storage) };
  } finally {
    await launcher.stopAll();
  }
}

function print(
  options: CapacityOptions,
  perInstance: Array<Record<string, number | null>>,
  storage: Awaited<ReturnType<typeof measureStorage>>,
): string {
  return [
    `(a) echo tasks over JSON-RPC 0.3, concurrency ${options.concurrency}, round robin over the instances, one store`,
    table(
      ["instances", "tasks/s", "tasks/s each", "server CPU ms/task", "store CPU ms/task", "p50 ms", "p99 ms", "errors"],
      perInstance.map((r) => [
        r["instances"]!,
        r["tasksPerSec"]!,
        r["tasksPerSecPerInstance"]!,
        r["serverCpuMsPerTask"]!,
        r["storeCpuMsPerTask"] ?? Number.NaN,
        r["p50Ms"]!,
        r["p99Ms"]!,
        r["errors"]!,
      ]),
    ),
    "",
    "(b) the store's share of one task (BSON bytes before compression)",
    table(
      ["task", "commands", "BSON bytes", "index entries", "GiB per 1M tasks"],
      storage.map((r) => [
        r.kind,
        Object.entries(r.storeCommandsPerTask)
          .map(([name, n]) => `${n} ${name}`)
          .join(", "),
        r.bsonBytesPerTask,
        r.indexEntriesPerTask,
        r.bsonGiBPerMillionTasks,
      ]),
    ),
  ].join("\n");
}
