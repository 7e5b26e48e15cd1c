import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { readOrCreateSecretFile } from "../secrets/local-key-file.js";
import type { InterruptTokenKey } from "./interrupt-tokens.js";

/** Where a development machine keeps its generated key, relative to DATA_DIR. */
export const INTERRUPT_TOKEN_KEY_FILE = join("keys", "interrupt-token.key");

/** HMAC-SHA256 keys shorter than this are refused. */
const MIN_SECRET_BYTES = 32;
const KID_SHAPE = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64_SHAPE = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * `kid1:base64secret,kid0:base64secret` (INTERRUPT_TOKEN_KEYS, also the key file's format, one per line or
 * comma-separated). The first key signs; all verify. Errors never echo a secret.
 */
export function parseInterruptTokenKeys(raw: string, source = "INTERRUPT_TOKEN_KEYS"): InterruptTokenKey[] {
  const entries = raw
    .split("\n")
    .filter((line) => !line.trim().startsWith("#"))
    .flatMap((line) => line.split(","))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (entries.length === 0) throw new Error(`${source} holds no key; expected kid:base64secret[,kid:base64secret...]`);
  const keys = entries.map((entry, i) => {
    const colon = entry.indexOf(":");
    const kid = colon > 0 ? entry.slice(0, colon) : "";
    const encoded = colon > 0 ? entry.slice(colon + 1) : "";
    if (!KID_SHAPE.test(kid))
      throw new Error(
        `${source} entry ${i + 1}: expected kid:base64secret with a key id of 1-64 characters A-Z a-z 0-9 . _ -`,
      );
    if (!BASE64_SHAPE.test(encoded))
      throw new Error(`${source} entry ${i + 1} (kid "${kid}"): the secret is not base64`);
    const secret = Buffer.from(encoded.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    if (secret.length < MIN_SECRET_BYTES) {
      throw new Error(
        `${source} entry ${i + 1} (kid "${kid}"): the secret must be at least ${MIN_SECRET_BYTES} bytes (e.g. \`openssl rand -base64 32\`)`,
      );
    }
    return { kid, secret };
  });
  const kids = new Set(keys.map((k) => k.kid));
  if (kids.size !== keys.length) throw new Error(`${source}: key ids must be unique`);
  return keys;
}

export interface LoadedInterruptTokenKeys {
  keys: InterruptTokenKey[];
  /** For the start-up log: where the keys came from (never the keys). */
  source: string;
}

/**
 * The configured keys if any; otherwise (development and tests only) one key generated on first use and kept
 * in `${dataDir}/keys/interrupt-token.key` with mode 0600, so tokens stay valid across restarts.
 * Production refuses to run on a generated key (config.ts already stops the start).
 */
export async function loadInterruptTokenKeys(args: {
  configured?: InterruptTokenKey[];
  dataDir: string;
  production: boolean;
}): Promise<LoadedInterruptTokenKeys> {
  if (args.configured && args.configured.length > 0) return { keys: args.configured, source: "INTERRUPT_TOKEN_KEYS" };
  if (args.production)
    throw new Error(
      "NODE_ENV=production needs INTERRUPT_TOKEN_KEYS: interrupt tokens are never signed with a generated key in production",
    );
  const path = join(args.dataDir, INTERRUPT_TOKEN_KEY_FILE);
  return { keys: await readOrCreateKeyFile(path), source: path };
}

async function readOrCreateKeyFile(path: string): Promise<InterruptTokenKey[]> {
  const text = await readOrCreateSecretFile(path, () => {
    const kid = `dev-${randomBytes(4).toString("hex")}`;
    return `# interrupt token signing key, generated for development; set INTERRUPT_TOKEN_KEYS in production\n${kid}:${randomBytes(32).toString("base64")}\n`;
  });
  return parseInterruptTokenKeys(text, path);
}
