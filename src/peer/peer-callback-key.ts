import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { parseKey256 } from "../secrets/key-256.js";
import { readOrCreateSecretFile } from "../secrets/local-key-file.js";
import { SecretValue } from "../secrets/secret-value.js";

/** Where a development machine keeps its generated callback key, relative to DATA_DIR. */
export const PEER_CALLBACK_KEY_FILE = join("keys", "peer-callback.key");

export interface LoadedPeerCallbackKey {
  key: SecretValue<Buffer>;
  /** For the start-up log: where the key came from (never the key). */
  source: string;
}

/**
 * The key of peers' callback tokens (peer-callbacks.ts): A2A_PEER_CALLBACK_KEY when configured; otherwise
 * (development and tests; production refuses to start without it, config) one key generated on first use and
 * kept in `${dataDir}/keys/peer-callback.key` with mode 0600, so tokens handed to peers stay valid across restarts.
 * It is a key of its own: the push keys can rotate without breaking callbacks still open.
 */
export async function loadPeerCallbackKey(args: {
  configured?: SecretValue<Buffer>;
  dataDir: string;
  production: boolean;
}): Promise<LoadedPeerCallbackKey> {
  if (args.configured) return { key: args.configured, source: "A2A_PEER_CALLBACK_KEY" };
  if (args.production)
    throw new Error("NODE_ENV=production with A2A_PEER_PUSH on needs A2A_PEER_CALLBACK_KEY, or A2A_PEER_PUSH=false");
  const path = join(args.dataDir, PEER_CALLBACK_KEY_FILE);
  const text = await readOrCreateSecretFile(
    path,
    () =>
      `# peers' callback token key, generated for development; set A2A_PEER_CALLBACK_KEY in production\n${randomBytes(32).toString("base64")}\n`,
  );
  const line = text.split("\n").find((l) => l.trim() !== "" && !l.trim().startsWith("#"));
  const key = line !== undefined ? parseKey256(line) : undefined;
  if (!key) throw new Error(`${path} does not hold a 256-bit key (delete it to have a new one generated)`);
  return { key: new SecretValue(key), source: path };
}
