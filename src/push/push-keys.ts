import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { ConfigError } from "../domain/env-settings.js";
import { readOrCreateSecretFile } from "../secrets/local-key-file.js";
import { SecretValue } from "../secrets/secret-value.js";
import type { PushSettings } from "./push-settings.js";

/** The key material push needs: encryption at rest (current + older keys) and the signature key. */
export interface PushKeys {
  encryptionKey: SecretValue<Buffer>;
  previousEncryptionKeys: SecretValue<Buffer>[];
  signingKey: SecretValue<string>;
  /** Where they came from, for the start-up line (never the keys themselves). */
  source: "configuration" | "data directory" | "ephemeral (insecure dev flag)" | "configuration + data directory";
}

/** Relative to DATA_DIR, next to the other generated keys. */
export const PUSH_KEY_FILE = join("keys", "push-keys.json");

interface KeyFile {
  version: 1;
  createdAt: string;
  /** base64, 32 bytes. */
  encryptionKey: string;
  signingKey: string;
}

/**
 * Keys from configuration when given. Otherwise (never in production; config.ts refuses that) they are
 * generated once and kept in `${dataDir}/keys/push-keys.json` (mode 0600), so stored secrets stay readable
 * across restarts. If that file cannot be read or written the start fails, unless the explicit dev flag
 * PUSH_INSECURE_EPHEMERAL_KEYS asks for throw-away keys.
 */
export async function resolvePushKeys(settings: PushSettings, dataDir: string): Promise<PushKeys> {
  const previousEncryptionKeys = settings.previousEncryptionKeys;
  if (settings.encryptionKey && settings.signingKey) {
    return {
      encryptionKey: settings.encryptionKey,
      signingKey: settings.signingKey,
      previousEncryptionKeys,
      source: "configuration",
    };
  }
  let stored: KeyFile;
  try {
    stored = await loadOrCreateKeyFile(dataDir);
  } catch (err) {
    if (settings.insecureEphemeralKeys) {
      return {
        encryptionKey: settings.encryptionKey ?? new SecretValue(randomBytes(32)),
        signingKey: settings.signingKey ?? new SecretValue(randomBytes(32).toString("base64url")),
        previousEncryptionKeys,
        source: "ephemeral (insecure dev flag)",
      };
    }
    throw new ConfigError(
      `push is enabled but no PUSH_ENCRYPTION_KEY / PUSH_SIGNING_KEY is configured and the key file in DATA_DIR (${join(dataDir, PUSH_KEY_FILE)}) could not be used: ${(err as Error).message}. ` +
        "Configure the keys, make DATA_DIR writable, set PUSH_ENABLED=false, or (dev only) PUSH_INSECURE_EPHEMERAL_KEYS=true",
    );
  }
  const fromConfig = settings.encryptionKey !== undefined || settings.signingKey !== undefined;
  return {
    encryptionKey: settings.encryptionKey ?? new SecretValue(Buffer.from(stored.encryptionKey, "base64")),
    signingKey: settings.signingKey ?? new SecretValue(stored.signingKey),
    previousEncryptionKeys,
    source: fromConfig ? "configuration + data directory" : "data directory",
  };
}

async function loadOrCreateKeyFile(dataDir: string): Promise<KeyFile> {
  const path = join(dataDir, PUSH_KEY_FILE);
  const text = await readOrCreateSecretFile(path, () => {
    const fresh: KeyFile = {
      version: 1,
      createdAt: new Date().toISOString(),
      encryptionKey: randomBytes(32).toString("base64"),
      signingKey: randomBytes(32).toString("base64url"),
    };
    return `${JSON.stringify(fresh, null, 2)}\n`;
  });
  const parsed = JSON.parse(text) as Partial<KeyFile>;
  if (
    parsed.version !== 1 ||
    typeof parsed.encryptionKey !== "string" ||
    Buffer.from(parsed.encryptionKey, "base64").length !== 32 ||
    typeof parsed.signingKey !== "string" ||
    parsed.signingKey.length < 32
  ) {
    throw new Error(`${path} is not a valid push key file`);
  }
  return parsed as KeyFile;
}
