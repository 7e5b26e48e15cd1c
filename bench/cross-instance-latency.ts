/**
 * Benchmark: commit → subscriber latency across instances. One task is written by "instance A" (its own
 * MongoDB client and task store) and followed by "instance B" (another client, another store, its own commit
 * feed and task observer, no shared in-process hook), for each commit feed: the change stream, and the
 * polling fallback at its default period.
 *
 *   npx tsx bench/cross-instance-latency.ts [commits] [gapMs]
 *
 * Method: A commits `commits` single-event transitions one after another, `gapMs` apart (so commits are not
 * pipelined into one batch); B follows the task from sequence 0. A commit's latency is the time from A calling
 * `commit` to B's follower yielding that event (so it includes the commit's own round trip, reported apart as
 * "commit"). Both run in this process (one clock); the store is MONGODB_URI or the wire-protocol test server in
 * its own process. We report p50/p95/p99/max per feed, and check the follower saw every sequence once, in order.
 * Results go to bench/results/cross-instance-latency.json.
 */
import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { MongoClient } from "mongodb";
import { projectRoot } from "../src/domain/project-root.js";
import { TaskObserver } from "../src/engine/task-observer.js";
import { TransitionHook } from "../src/engine/transition-hook.js";
import { CommitBus } from "../src/store/commit-bus.js";
import { createLogger } from "../src/observability/logger.js";
import { openMongoCommitFeed } from "../src/store/change-stream-commit-feed.js";
import type { CommitFeedSettings } from "../src/store/commit-feed.js";
import { MongoTaskStore } from "../src/store/mongo-task-store.js";
import type { RunEvent, TaskRecord } from "../src/domain/task-record.js";
import { dropDatabase, startStoreServer } from "./lib/store-server.js";

const FEEDS: CommitFeedSettings[] = [
  { mode: "change-stream", pollMs: 100 },
  { mode: "poll", pollMs: 100 },
];

const now = () => new Date().toISOString();
const event = (taskId: string, sequence: number, type = "node.started"): RunEvent => ({
  eventId: `${taskId}:${sequence}`,
  runId: taskId,
  type,
  payload: {},
  timestamp: now(),
  sequence,
});
function record(taskId: string): TaskRecord {
  const at = now();
  return {
    taskId,
    tenant: "bench",
    contextId: "bench",
    workflowId: "echo",
    version: 0,
    status: "running",
    a2a: { taskId, runId: taskId, state: "working", updatedAt: at },
    snapshot: { value: "running" },
    createdAt: at,
    updatedAt: at,
    expireAt: null,
    timerDueAt: null,
  };
}
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
const summary = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    n: s.length,
    p50: r(quantile(s, 0.5)),
    p95: r(quantile(s, 0.95)),
    p99: r(quantile(s, 0.99)),
    max: r(s.at(-1) ?? NaN),
  };
};

async function measure(uri: string, dbName: string, settings: CommitFeedSettings, commits: number, gapMs: number) {
  const [clientA, clientB] = [await MongoClient.connect(uri), await MongoClient.connect(uri)];
  const writer = new MongoTaskStore(clientA, clientA.db(dbName));
  const reader = new MongoTaskStore(clientB, clientB.db(dbName));
  await writer.init();
  const feed = await openMongoCommitFeed(clientB.db(dbName), settings, (err) => console.error("feed error", err));
  const reads = {
    get: async (id: string) => (await reader.get(id)) as TaskRecord,
    readEvents: (id: string, from: number, limit?: number) => reader.readEvents(id, from, limit),
  };
  const observer = new TaskObserver({
    reads,
    commits: new CommitBus(new TransitionHook(createLogger("silent")), feed),
    maxBuffered: 10_000,
  });
  const taskId = randomUUID();
  const base = record(taskId);
  await writer.create(base, [event(taskId, 0, "run.created")]);
  const sent = new Map<number, number>();
  const seenAt = new Map<number, number>();
  const order: number[] = [];
  const following = (async () => {
    for await (const e of observer.follow({ taskId, status: "running" }, 1, { onOverflow: "catch-up" })) {
      seenAt.set(e.sequence, performance.now());
      order.push(e.sequence);
    }
  })();
  const commitMs: number[] = [];
  for (let sequence = 1; sequence <= commits; sequence++) {
    const last = sequence === commits;
    const start = performance.now();
    sent.set(sequence, start);
    await writer.commit(
      taskId,
      sequence - 1,
      {
        status: last ? "completed" : "running",
        a2a: base.a2a,
        snapshot: base.snapshot,
        updatedAt: now(),
        expireAt: null,
        timerDueAt: null,
      },
      [event(taskId, sequence, last ? "run.completed" : "node.started")],
    );
    commitMs.push(performance.now() - start);
    await new Promise((r) => setTimeout(r, gapMs));
  }
  await following;
  await feed.close();
  await Promise.all([clientA.close(), clientB.close()]);
  const latencies = [...sent].map(([sequence, at]) => (seenAt.get(sequence) ?? NaN) - at);
  const inOrderOnce = order.length === commits && order.every((s, i) => s === i + 1);
  return {
    feed: settings.mode,
    ...(settings.mode === "poll" ? { pollMs: settings.pollMs } : {}),
    latencyMs: summary(latencies),
    commitMs: summary(commitMs),
    inOrderOnce,
  };
}

/** Both feeds, each on a fresh database of the store at `uri` (dropped after); `npm run bench -- multi` uses it too. */
export async function measureCrossInstanceLatency(uri: string, commits: number, gapMs: number) {
  const results = [];
  for (const settings of FEEDS) {
    const dbName = `bench_fanout_${randomUUID().slice(0, 8)}`;
    try {
      results.push(await measure(uri, dbName, settings, commits, gapMs));
    } finally {
      await dropDatabase(uri, dbName);
    }
  }
  return results;
}

async function main(): Promise<void> {
  const commits = Number(process.argv[2] ?? 200);
  const gapMs = Number(process.argv[3] ?? 5);
  const store = await startStoreServer();
  try {
    const results = await measureCrossInstanceLatency(store.uri, commits, gapMs);
    const cpus = os.cpus();
    const out = {
      at: now(),
      machine: { cpu: cpus[0]?.model, cores: cpus.length, node: process.version, loadavg: os.loadavg() },
      store: store.description,
      commits,
      gapMs,
      results,
    };
    console.table(
      results.map((r) => ({
        feed: r.feed,
        ...Object.fromEntries(Object.entries(r.latencyMs).map(([k, v]) => [`latency ${k}`, v])),
        "commit p50": r.commitMs.p50,
        inOrderOnce: r.inOrderOnce,
      })),
    );
    await writeFile(
      join(projectRoot, "bench/results/cross-instance-latency.json"),
      `${JSON.stringify(out, null, 2)}\n`,
    );
  } finally {
    await store.stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
