import { checkEgressUrlSyntax, EgressRefusedError, type EgressPolicy } from "../egress/egress-guard.js";
import { EnvReader, ConfigError, type Env } from "../domain/env-settings.js";
import { key256Problem, parseKey256 } from "../secrets/key-256.js";
import { SecretValue } from "../secrets/secret-value.js";

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

/** A 256-bit key (secrets/key-256.ts; the value itself is never echoed in errors). */
function aesKey(env: EnvReader, raw: string, name: string): SecretValue<Buffer> | undefined {
  const key = parseKey256(raw);
  if (!key) {
    env.problem(key256Problem(name));
    return undefined;
  }
  return new SecretValue(key);
}

/** The PUSH_* variables; production rules are in `pushProductionProblems`. */
export function readPushSettings(env: EnvReader): PushSettings {
  const encryptionRaw = env.raw("PUSH_ENCRYPTION_KEY");
  const encryptionKey = encryptionRaw !== undefined ? aesKey(env, encryptionRaw, "PUSH_ENCRYPTION_KEY") : undefined;
  const previousEncryptionKeys = env
    .list("PUSH_ENCRYPTION_KEY_PREVIOUS")
    .flatMap((k) => aesKey(env, k, "PUSH_ENCRYPTION_KEY_PREVIOUS") ?? []);
  const signingRaw = env.raw("PUSH_SIGNING_KEY");
  if (signingRaw !== undefined && signingRaw.length < 32)
    env.problem("PUSH_SIGNING_KEY must be at least 32 characters");
  const egress: EgressPolicy = {
    allowHttpLoopback: env.bool("PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS", false),
    allowedPorts: env.ports("PUSH_ALLOWED_PORTS"),
    allowHosts: env.list("PUSH_ALLOW_HOSTS"),
    denyHosts: env.list("PUSH_DENY_HOSTS"),
    // No private-host setting: push targets are public, always (webhooks come from callers, not the operator).
    settings: { allowedPorts: "PUSH_ALLOWED_PORTS", allowHosts: "PUSH_ALLOW_HOSTS", denyHosts: "PUSH_DENY_HOSTS" },
  };
  // The guard compiles the lists on every check; compile them once now so a bad entry stops the start.
  const probes: Array<[string, EgressPolicy]> = [
    ["PUSH_ALLOW_HOSTS", { ...egress, denyHosts: [] }],
    ["PUSH_DENY_HOSTS", { ...egress, allowHosts: [] }],
  ];
  for (const [name, probe] of probes) {
    try {
      checkEgressUrlSyntax("https://config-check.example/", probe, "push");
    } catch (err) {
      if (!(err instanceof EgressRefusedError)) env.problem(`${name}: ${(err as Error).message}`);
    }
  }
  const settings: PushSettings = {
    enabled: env.bool("PUSH_ENABLED", true),
    ...(encryptionKey ? { encryptionKey } : {}),
    previousEncryptionKeys,
    ...(signingRaw ? { signingKey: new SecretValue(signingRaw) } : {}),
    insecureEphemeralKeys: env.bool("PUSH_INSECURE_EPHEMERAL_KEYS", false),
    egress,
    transitions: env.oneOf(
      "PUSH_TRANSITIONS",
      ["interrupted-and-terminal", "all"] as const,
      "interrupted-and-terminal",
    ),
    timeoutMs: env.int("PUSH_TIMEOUT_MS", 10_000, 100, 120_000),
    maxAttempts: env.int("PUSH_MAX_ATTEMPTS", 10, 1, 1_000),
    maxAgeMs: env.int("PUSH_MAX_AGE_MS", 24 * 60 * 60 * 1000, 1_000),
    retryBaseMs: env.int("PUSH_RETRY_BASE_MS", 1_000, 1, 3_600_000),
    retryMaxMs: env.int("PUSH_RETRY_MAX_MS", 5 * 60 * 1000, 1, 24 * 3_600_000),
    concurrency: env.int("PUSH_CONCURRENCY", 16, 1, 1_000),
    breakerThreshold: env.int("PUSH_BREAKER_THRESHOLD", 5, 1, 1_000),
    breakerCooldownMs: env.int("PUSH_BREAKER_COOLDOWN_MS", 30_000, 10, 24 * 3_600_000),
    maxConfigsPerTask: env.int("PUSH_MAX_CONFIGS_PER_TASK", 10, 1, 1_000),
    sweepIntervalMs: env.int("PUSH_SWEEP_INTERVAL_MS", 30_000, 10, 3_600_000),
  };
  if (settings.retryMaxMs < settings.retryBaseMs)
    env.problem("PUSH_RETRY_MAX_MS must not be smaller than PUSH_RETRY_BASE_MS");
  return settings;
}

/** `readPushSettings` on its own; throws one ConfigError naming every problem. */
export function loadPushSettings(env: Env): PushSettings {
  return EnvReader.load(env, readPushSettings);
}

/** What production refuses about push: the test-only and dev-only flags, and keys that do not come from configuration. */
export function pushProductionProblems(settings: PushSettings): string[] {
  const problems: string[] = [];
  if (settings.egress.allowHttpLoopback)
    problems.push("PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS is test-only and is refused when NODE_ENV=production");
  if (settings.insecureEphemeralKeys)
    problems.push("PUSH_INSECURE_EPHEMERAL_KEYS is a dev-only flag and is refused when NODE_ENV=production");
  if (settings.enabled && (!settings.encryptionKey || !settings.signingKey)) {
    const missing = [
      settings.encryptionKey ? [] : ["PUSH_ENCRYPTION_KEY"],
      settings.signingKey ? [] : ["PUSH_SIGNING_KEY"],
    ].flat();
    problems.push(
      `NODE_ENV=production with push enabled needs ${missing.join(" and ")} from configuration (or PUSH_ENABLED=false)`,
    );
  }
  return problems;
}

export function checkPushForProduction(settings: PushSettings): void {
  const problems = pushProductionProblems(settings);
  if (problems.length > 0) throw new ConfigError(problems);
}
