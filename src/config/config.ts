import { isAbsolute, join } from "node:path";
import { projectRoot } from "./project-root.js";

/** Configuration from the environment, validated once at start. Every variable is in the README table. */
export interface Config {
  env: "development" | "test" | "production";
  port: number;
  host: string;
  publicUrl: string;
  logLevel: string;
  store: "auto" | "mongodb" | "memory";
  mongodbUri?: string;
  mongodbDb: string;
  dataDir: string;
  workflowsDir?: string;
  defaultSkill: string;
  retentionMs: number;
  maxBodyBytes: number;
  blockingTimeoutMs: number;
  subscriberBuffer: number;
  timerPollMs: number;
  shutdownGraceMs: number;
}

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number between ${min} and ${max} (got "${raw}")`);
  }
  return value;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${allowed.join(", ")} (got "${raw}")`);
  return raw as T;
}

function url(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  try {
    const parsed = new URL(raw);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("not http(s)");
    return raw.replace(/\/+$/, "");
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL (got "${raw}")`);
  }
}

export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = oneOf(env, "NODE_ENV", ["development", "test", "production"] as const, "development");
  const port = int(env, "PORT", 8080, 0, 65535);
  const host = env["HOST"] || "127.0.0.1";
  const mongodbUri = env["MONGODB_URI"] || undefined;
  if (mongodbUri && !/^mongodb(\+srv)?:\/\//.test(mongodbUri)) throw new ConfigError(`MONGODB_URI must start with mongodb:// or mongodb+srv://`);
  const store = oneOf(env, "STORE", ["auto", "mongodb", "memory"] as const, "auto");
  if (store === "mongodb" && !mongodbUri) throw new ConfigError("STORE=mongodb needs MONGODB_URI");
  const dataDirRaw = env["DATA_DIR"] || "data";
  const config: Config = {
    env: nodeEnv,
    port,
    host,
    publicUrl: url(env, "PUBLIC_URL", `http://localhost:${port}`),
    logLevel: oneOf(env, "LOG_LEVEL", ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const, "info"),
    store,
    ...(mongodbUri ? { mongodbUri } : {}),
    mongodbDb: env["MONGODB_DB"] || "openwop_a2a",
    dataDir: isAbsolute(dataDirRaw) ? dataDirRaw : join(projectRoot, dataDirRaw),
    ...(env["WORKFLOWS_DIR"] ? { workflowsDir: env["WORKFLOWS_DIR"] } : {}),
    defaultSkill: env["DEFAULT_SKILL"] || "echo",
    retentionMs: int(env, "TASK_RETENTION_HOURS", 24 * 7, 1) * 60 * 60 * 1000,
    maxBodyBytes: int(env, "MAX_BODY_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
    blockingTimeoutMs: int(env, "BLOCKING_TIMEOUT_MS", 60_000, 0),
    subscriberBuffer: int(env, "SUBSCRIBER_BUFFER", 256, 1, 100_000),
    timerPollMs: int(env, "TIMER_POLL_MS", 1_000, 10, 60_000),
    shutdownGraceMs: int(env, "SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
  };
  if (config.env === "production") {
    if (!mongodbUri) throw new ConfigError("NODE_ENV=production needs MONGODB_URI: production never runs on the embedded or in-memory store");
    if (config.store === "memory") throw new ConfigError("NODE_ENV=production does not allow STORE=memory");
    if (!env["PUBLIC_URL"]) throw new ConfigError("NODE_ENV=production needs PUBLIC_URL (the address callers use; it goes on the agent card)");
  }
  return config;
}
