import type { CommitFeedSettings } from "./commit-feed.js";
import type { EnvReader } from "../domain/env-settings.js";
import { DEFAULT_TASK_SIZE_LIMITS, type TaskSizeLimits } from "./task-size-limits.js";
import { DEFAULT_STORE_TIMEOUT_MS } from "./store-call-budget.js";

/** Where tasks are kept, and how large they may grow (README "Configuration"). */
export interface StoreSettings {
  store: "auto" | "mongodb" | "memory";
  mongodbUri?: string;
  /** MONGODB_DB when set, else the database named in MONGODB_URI's path, else `openwop_a2a`. */
  mongodbDb: string;
  taskStore: TaskStoreSettings;
  /** How this instance hears commits made by other instances (README "Running several instances"). */
  commitFeed: CommitFeedSettings;
  /**
   * STORE_TIMEOUT_MS: the longest a request waits for one store operation (a caller's gRPC/Connect deadline may
   * cut it shorter); a store down or stalled past it answers UNAVAILABLE / 503.
   */
  storeTimeoutMs: number;
}

/** What every task store adapter is built with. */
export interface TaskStoreSettings {
  limits: TaskSizeLimits;
  /**
   * MEMORY_STORE_RETENTION_MS: how long the in-memory store keeps a terminal task (at most; TASK_RETENTION_HOURS
   * may end it sooner) before it reads as not found and its memory is freed. Not used by MongoDB.
   */
  memoryRetentionMs?: number;
  /** MEMORY_STORE_MAX_TERMINAL_TASKS: past this many terminal tasks, the in-memory store drops those that ended first. */
  memoryMaxTerminalTasks?: number;
  /**
   * Test-only fault seam (`OPENWOP_TEST_KILL_AFTER_EVENTS_WRITE=<event type>`): the MongoDB store SIGKILLs its
   * own process right after writing a batch of events that contains this type, before the task head moves
   * (on the one-command path: after a bulkWrite of only the batch's events, what a command cut short leaves).
   * The durability test uses it to crash between the two writes; refused in production.
   */
  killAfterEventsWriteOf?: string;
}

const MIB = 1024 * 1024;
/**
 * The in-memory store is for development, tests and the fallback: it keeps a finished task for ten minutes,
 * and at most 1 000 finished tasks (about 6 KB each for an echo task), so its memory is bounded.
 */
export const DEFAULT_MEMORY_RETENTION_MS = 600_000;
export const DEFAULT_MEMORY_MAX_TERMINAL_TASKS = 1_000;

/** STORE, MONGODB_URI, MONGODB_DB and the size caps; production runs on MongoDB only. */
export function readStoreSettings(env: EnvReader, production: boolean): StoreSettings {
  const mongodbUri = env.raw("MONGODB_URI");
  if (mongodbUri !== undefined && !/^mongodb(\+srv)?:\/\//.test(mongodbUri))
    env.problem("MONGODB_URI must start with mongodb:// or mongodb+srv://");
  const store = env.oneOf("STORE", ["auto", "mongodb", "memory"] as const, "auto");
  if (store === "mongodb" && mongodbUri === undefined) env.problem("STORE=mongodb needs MONGODB_URI");
  if (production) {
    if (mongodbUri === undefined)
      env.problem("NODE_ENV=production needs MONGODB_URI: production never runs on the embedded or in-memory store");
    if (store === "memory") env.problem("NODE_ENV=production does not allow STORE=memory");
  }
  const mongodbDb =
    env.raw("MONGODB_DB") || (mongodbUri !== undefined ? databaseInUri(mongodbUri) : undefined) || DEFAULT_DATABASE;
  const storeTimeoutMs = env.int("STORE_TIMEOUT_MS", DEFAULT_STORE_TIMEOUT_MS, 100, 30_000);
  return {
    store,
    ...(mongodbUri !== undefined ? { mongodbUri } : {}),
    mongodbDb,
    taskStore: readTaskStoreSettings(env, production),
    commitFeed: readCommitFeedSettings(env),
    storeTimeoutMs,
  };
}

/** COMMIT_FEED (auto | change-stream | poll) and COMMIT_FEED_POLL_MS. */
function readCommitFeedSettings(env: EnvReader): CommitFeedSettings {
  return {
    mode: env.oneOf("COMMIT_FEED", ["auto", "change-stream", "poll"] as const, "auto"),
    pollMs: env.int("COMMIT_FEED_POLL_MS", 100, 5, 60_000),
  };
}

/** MAX_MESSAGE_BYTES, MAX_ARTIFACT_BYTES, MAX_TASK_BYTES, MEMORY_STORE_*, and the test-only crash seam. */
function readTaskStoreSettings(env: EnvReader, production: boolean): TaskStoreSettings {
  const limits: TaskSizeLimits = {
    maxMessageBytes: env.int("MAX_MESSAGE_BYTES", DEFAULT_TASK_SIZE_LIMITS.maxMessageBytes, 1024, 15 * MIB),
    maxArtifactBytes: env.int("MAX_ARTIFACT_BYTES", DEFAULT_TASK_SIZE_LIMITS.maxArtifactBytes, 1024, 15 * MIB),
    maxTaskBytes: env.int("MAX_TASK_BYTES", DEFAULT_TASK_SIZE_LIMITS.maxTaskBytes, 1024, 15 * MIB),
  };
  const kill = env.raw("OPENWOP_TEST_KILL_AFTER_EVENTS_WRITE");
  if (kill !== undefined && production)
    env.problem(
      "OPENWOP_TEST_KILL_AFTER_EVENTS_WRITE is a test-only fault seam and is refused when NODE_ENV=production",
    );
  const memoryRetentionMs = env.int("MEMORY_STORE_RETENTION_MS", DEFAULT_MEMORY_RETENTION_MS, 1_000);
  const memoryMaxTerminalTasks = env.int("MEMORY_STORE_MAX_TERMINAL_TASKS", DEFAULT_MEMORY_MAX_TERMINAL_TASKS, 1);
  return {
    limits,
    memoryRetentionMs,
    memoryMaxTerminalTasks,
    ...(kill !== undefined ? { killAfterEventsWriteOf: kill } : {}),
  };
}

const DEFAULT_DATABASE = "openwop_a2a";

/** The database a connection string names in its path (`mongodb://host/prod?...` names `prod`), if any. */
export function databaseInUri(uri: string): string | undefined {
  const rest = uri.replace(/^mongodb(\+srv)?:\/\//, "");
  // Credentials and hosts hold no unescaped "/", so the first one starts the path.
  const slash = rest.indexOf("/");
  if (slash < 0) return undefined;
  const path = rest.slice(slash + 1).split("?")[0] ?? "";
  try {
    return decodeURIComponent(path) || undefined;
  } catch {
    return path || undefined;
  }
}
