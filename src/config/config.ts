import { isAbsolute, join } from "node:path";
import { checkPushUrlSyntax, EgressRefusedError, type EgressPolicy } from "../push/push-egress-guard.js";
import { projectRoot } from "./project-root.js";
import { SecretValue } from "./secret-value.js";
import { loadAuthSettings, type AuthSettings } from "../auth/auth-settings.js";
import { loadPeerSettings, type A2APeerSettings } from "../peer/peer-settings.js";
import { loadStoreSettings, type StoreSettings } from "../store/store-settings.js";
import { parseInterruptTokenKeys } from "../interrupts/interrupt-token-keys.js";
import type { InterruptTokenKey } from "../interrupts/interrupt-tokens.js";

/** Which A2A status changes are pushed: the interrupted and terminal ones (the minimum), or every one. */
export type PushTransitions = "interrupted-and-terminal" | "all";

/** Push notifications (README "Push notifications"). Keys are secrets and never print. */
export interface PushSettings {
  enabled: boolean;
  /** AES-256-GCM key for token/credentials at rest; absent = generated once and kept under DATA_DIR (not in production). */
  encryptionKey?: SecretValue<Buffer>;
  /** Older keys still accepted for decryption (key rotation). */
  previousEncryptionKeys: SecretValue<Buffer>[];
  /** HMAC-SHA256 key (its UTF-8 bytes) for X-OpenWOP-Signature; absent = generated like the encryption key. */
  signingKey?: SecretValue<string>;
  /** Dev only: random keys per process (secrets stored by a previous process become unreadable). */
  insecureEphemeralKeys: boolean;
  egress: EgressPolicy;
  transitions: PushTransitions;
  timeoutMs: number;
  maxAttempts: number;
  maxAgeMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  concurrency: number;
  breakerThreshold: number;
  breakerCooldownMs: number;
  maxConfigsPerTask: number;
  sweepIntervalMs: number;
}

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
  auth: AuthSettings;
  push: PushSettings;
  /** Calls to remote A2A agents (`a2a.invoke` nodes): A2A_PEER_* variables. */
  a2aPeer: A2APeerSettings;
  /** Size caps of stored tasks (MAX_MESSAGE_BYTES, MAX_ARTIFACT_BYTES, MAX_TASK_BYTES). */
  taskStore: StoreSettings;
  /** Signed interrupt tokens: configured keys (the first signs, all verify) and the lifetime of an issued token. */
  interruptTokens: { keys?: SecretValue<InterruptTokenKey[]>; ttlMs: number };
  /** The host-sample conformance seams under /v1/host/sample/ (on by default in development and test). */
  conformanceSeams: boolean;
  /** How long an Idempotency-Key record of POST /v1/runs is kept (at least 24 h). */
  idempotencyTtlMs: number;
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

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw new ConfigError(`${name} must be true or false (got "${raw}")`);
}

function list(env: Env, name: string): string[] {
  return (env[name] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** A 256-bit key as 64 hex characters or base64/base64url (the value itself is never echoed in errors). */
function aesKey(raw: string, name: string): SecretValue<Buffer> {
  const text = raw.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(text)) key = Buffer.from(text, "hex");
  else if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(text)) key = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64");
  if (!key || key.length !== 32) throw new ConfigError(`${name} must be a 256-bit key: 64 hex characters or 32 bytes in base64 (e.g. \`openssl rand -base64 32\`)`);
  return new SecretValue(key);
}

/** The PUSH_* variables; production rules are in `checkPushForProduction`. */
export function loadPushSettings(env: Env): PushSettings {
  const encryptionKey = env["PUSH_ENCRYPTION_KEY"] ? aesKey(env["PUSH_ENCRYPTION_KEY"], "PUSH_ENCRYPTION_KEY") : undefined;
  const previousEncryptionKeys = list(env, "PUSH_ENCRYPTION_KEY_PREVIOUS").map((k) => aesKey(k, "PUSH_ENCRYPTION_KEY_PREVIOUS"));
  const signingRaw = env["PUSH_SIGNING_KEY"];
  if (signingRaw !== undefined && signingRaw !== "" && signingRaw.length < 32) throw new ConfigError("PUSH_SIGNING_KEY must be at least 32 characters");
  const allowedPorts = list(env, "PUSH_ALLOWED_PORTS").map((p) => {
    const port = Number(p);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new ConfigError(`PUSH_ALLOWED_PORTS must be a comma-separated list of ports (got "${p}")`);
    return port;
  });
  const egress: EgressPolicy = {
    allowHttpLoopback: bool(env, "PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS", false),
    allowedPorts,
    allowHosts: list(env, "PUSH_ALLOW_HOSTS"),
    denyHosts: list(env, "PUSH_DENY_HOSTS"),
  };
  // The guard compiles the lists on every check; compile them once now so a bad entry stops the start.
  const probes: Array<[string, EgressPolicy]> = [
    ["PUSH_ALLOW_HOSTS", { ...egress, denyHosts: [] }],
    ["PUSH_DENY_HOSTS", { ...egress, allowHosts: [] }],
  ];
  for (const [name, probe] of probes) {
    try {
      checkPushUrlSyntax("https://config-check.example/", probe);
    } catch (err) {
      if (!(err instanceof EgressRefusedError)) throw new ConfigError(`${name}: ${(err as Error).message}`);
    }
  }
  const settings: PushSettings = {
    enabled: bool(env, "PUSH_ENABLED", true),
    ...(encryptionKey ? { encryptionKey } : {}),
    previousEncryptionKeys,
    ...(signingRaw ? { signingKey: new SecretValue(signingRaw) } : {}),
    insecureEphemeralKeys: bool(env, "PUSH_INSECURE_EPHEMERAL_KEYS", false),
    egress,
    transitions: oneOf(env, "PUSH_TRANSITIONS", ["interrupted-and-terminal", "all"] as const, "interrupted-and-terminal"),
    timeoutMs: int(env, "PUSH_TIMEOUT_MS", 10_000, 100, 120_000),
    maxAttempts: int(env, "PUSH_MAX_ATTEMPTS", 10, 1, 1_000),
    maxAgeMs: int(env, "PUSH_MAX_AGE_MS", 24 * 60 * 60 * 1000, 1_000),
    retryBaseMs: int(env, "PUSH_RETRY_BASE_MS", 1_000, 1, 3_600_000),
    retryMaxMs: int(env, "PUSH_RETRY_MAX_MS", 5 * 60 * 1000, 1, 24 * 3_600_000),
    concurrency: int(env, "PUSH_CONCURRENCY", 16, 1, 1_000),
    breakerThreshold: int(env, "PUSH_BREAKER_THRESHOLD", 5, 1, 1_000),
    breakerCooldownMs: int(env, "PUSH_BREAKER_COOLDOWN_MS", 30_000, 10, 24 * 3_600_000),
    maxConfigsPerTask: int(env, "PUSH_MAX_CONFIGS_PER_TASK", 10, 1, 1_000),
    sweepIntervalMs: int(env, "PUSH_SWEEP_INTERVAL_MS", 30_000, 10, 3_600_000),
  };
  if (settings.retryMaxMs < settings.retryBaseMs) throw new ConfigError("PUSH_RETRY_MAX_MS must not be smaller than PUSH_RETRY_BASE_MS");
  return settings;
}

/** What production refuses about push: the test-only and dev-only flags, and keys that do not come from configuration. */
export function checkPushForProduction(settings: PushSettings): void {
  if (settings.egress.allowHttpLoopback) throw new ConfigError("PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS is test-only and is refused when NODE_ENV=production");
  if (settings.insecureEphemeralKeys) throw new ConfigError("PUSH_INSECURE_EPHEMERAL_KEYS is a dev-only flag and is refused when NODE_ENV=production");
  if (settings.enabled && (!settings.encryptionKey || !settings.signingKey)) {
    throw new ConfigError("NODE_ENV=production with push enabled needs PUSH_ENCRYPTION_KEY and PUSH_SIGNING_KEY from configuration (or PUSH_ENABLED=false)");
  }
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

function interruptTokenSettings(env: Env): Config["interruptTokens"] {
  const raw = env["INTERRUPT_TOKEN_KEYS"];
  let keys: InterruptTokenKey[] | undefined;
  try {
    keys = raw ? parseInterruptTokenKeys(raw) : undefined;
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return { ...(keys ? { keys: new SecretValue(keys) } : {}), ttlMs: int(env, "INTERRUPT_TOKEN_TTL_SECONDS", 30 * 60, 1, 7 * 24 * 60 * 60) * 1000 };
}

function authSettings(env: Env, production: boolean): AuthSettings {
  const settings = loadAuthSettings(env, production);
  if (typeof settings === "string") throw new ConfigError(settings);
  return settings;
}

function peerSettings(env: Env, production: boolean): A2APeerSettings {
  const settings = loadPeerSettings(env, production);
  if (typeof settings === "string") throw new ConfigError(settings);
  return settings;
}

function storeSettings(env: Env, production: boolean): StoreSettings {
  const settings = loadStoreSettings(env, production);
  if (typeof settings === "string") throw new ConfigError(settings);
  return settings;
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
    interruptTokens: interruptTokenSettings(env),
    conformanceSeams: bool(env, "CONFORMANCE_SEAMS", nodeEnv !== "production"),
    idempotencyTtlMs: int(env, "IDEMPOTENCY_TTL_HOURS", 24, 24, 24 * 365) * 60 * 60 * 1000,
    auth: authSettings(env, nodeEnv === "production"),
    push: loadPushSettings(env),
    a2aPeer: peerSettings(env, nodeEnv === "production"),
    taskStore: storeSettings(env, nodeEnv === "production"),
  };
  if (config.env === "production") {
    if (!mongodbUri) throw new ConfigError("NODE_ENV=production needs MONGODB_URI: production never runs on the embedded or in-memory store");
    if (config.store === "memory") throw new ConfigError("NODE_ENV=production does not allow STORE=memory");
    if (!env["PUBLIC_URL"]) throw new ConfigError("NODE_ENV=production needs PUBLIC_URL (the address callers use; it goes on the agent card)");
    if (!config.interruptTokens.keys) throw new ConfigError("NODE_ENV=production needs INTERRUPT_TOKEN_KEYS (kid:base64secret,...): interrupt tokens are never signed with a generated key in production");
    checkPushForProduction(config.push);
  }
  return config;
}
