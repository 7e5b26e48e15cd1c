import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { join } from "node:path";
import { calculateJwkThumbprint, exportJWK, FlattenedSign, type JWK } from "jose";
import { readOrCreateSecretFile } from "./local-key-file.js";
import { SecretValue } from "./secret-value.js";

/** Where a development machine keeps its generated signing key, relative to DATA_DIR. */
export const SIGNING_KEY_FILE = join("keys", "signing-keys.json");

export type SigningAlgorithm = "ES256" | "EdDSA";

/** One of the host's asymmetric keys: the private half stays in a SecretValue, the public half is published. */
export interface SigningKey {
  kid: string;
  alg: SigningAlgorithm;
  privateKey: SecretValue<KeyObject>;
  /** What the JWKS serves: kty, crv, x (, y), kid, alg, use. Never `d`. */
  publicJwk: JWK;
}

/**
 * The host's own signing keys (push JWTs, the agent card's JWS), one ring: the first key signs, every key is
 * published in the JWKS. Rotation: add a key after the current one, let receivers' caches see it, move it
 * first, remove the old one later.
 */
export class SigningKeyRing {
  constructor(
    readonly keys: readonly SigningKey[],
    /** For the start-up line: where the keys came from (never the keys). */
    readonly source: string,
  ) {
    if (keys.length === 0) throw new Error("a signing key ring needs at least one key");
  }

  /** The key that signs. */
  get current(): SigningKey {
    return this.keys[0]!;
  }

  /**
   * A detached JWS (RFC 7515 appendix F) over `payload` with the current key: the base64url protected header
   * (`alg`, `kid`, `typ: "JOSE"` and `header`'s members) and signature; the payload is not carried.
   */
  async signDetached(
    payload: Uint8Array,
    header: { jku?: string } = {},
  ): Promise<{ protected: string; signature: string }> {
    const key = this.current;
    const jws = await new FlattenedSign(payload)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JOSE", ...header })
      .sign(key.privateKey.reveal());
    return { protected: jws.protected!, signature: jws.signature };
  }

  /** The public JSON Web Key Set served at /.well-known/jwks.json. */
  jwks(): { keys: JWK[] } {
    return { keys: this.keys.map((k) => ({ ...k.publicJwk })) };
  }
}

interface ParsedKey {
  kid?: string;
  key: KeyObject;
  alg: SigningAlgorithm;
}

const KID_SHAPE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * SIGNING_KEYS (and the dev key file): PEM private keys (PKCS#8 or SEC1, one or more blocks), or JSON: one
 * private JWK, an array of them, or a JWKS `{"keys": [...]}`. Only EC P-256 (ES256) and Ed25519 (EdDSA).
 * Synchronous (config.ts validates at load). Errors name the entry, never its content.
 */
export function parseSigningKeys(raw: string, source = "SIGNING_KEYS"): ParsedKey[] {
  // An env file often holds a PEM on one line with literal "\n".
  const text = raw.includes("-----BEGIN") ? raw.replace(/\\n/g, "\n").trim() : raw.trim();
  if (text.length === 0) throw new Error(`${source} holds no key; expected PEM private keys or JSON private JWKs`);
  const entries = text.startsWith("{") || text.startsWith("[") ? jsonEntries(text, source) : pemEntries(text, source);
  const keys = entries.map((entry, i) => withAlgorithm(entry, `${source} entry ${i + 1}`));
  const kids = keys.flatMap((k) => (k.kid ? [k.kid] : []));
  if (new Set(kids).size !== kids.length) throw new Error(`${source}: key ids (kid) must be unique`);
  return keys;
}

function jsonEntries(text: string, source: string): Array<{ kid?: string; key: KeyObject }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(
      `${source} does not parse: it starts like JSON but is not valid JSON (expected a private JWK, an array of them, or {"keys": [...]})`,
    );
  }
  const list = Array.isArray(parsed)
    ? parsed
    : isObject(parsed) && Array.isArray(parsed["keys"])
      ? (parsed["keys"] as unknown[])
      : [parsed];
  if (list.length === 0) throw new Error(`${source} holds no key`);
  return list.map((item, i) => {
    const where = `${source} entry ${i + 1}`;
    if (!isObject(item)) throw new Error(`${where} is not a JWK object`);
    if (item["kty"] === "oct")
      throw new Error(
        `${where}: HMAC (kty "oct") keys are refused; push JWTs and card signatures need an asymmetric key (EC P-256 or Ed25519) that receivers verify with the public half`,
      );
    if (typeof item["d"] !== "string")
      throw new Error(
        `${where}: the private key is missing (a public JWK has no "d"); give the private JWK, the JWKS publishes its public half`,
      );
    const kid = item["kid"];
    if (kid !== undefined && (typeof kid !== "string" || !KID_SHAPE.test(kid)))
      throw new Error(`${where}: "kid" must be 1-128 characters A-Z a-z 0-9 . _ : -`);
    try {
      return {
        ...(typeof kid === "string" ? { kid } : {}),
        key: createPrivateKey({ key: item as JWK & { kty: string }, format: "jwk" }),
      };
    } catch {
      throw new Error(`${where} does not parse as a private JWK`);
    }
  });
}

function pemEntries(text: string, source: string): Array<{ key: KeyObject }> {
  const blocks = [...text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g)];
  if (blocks.length === 0)
    throw new Error(
      `${source} does not parse: expected PEM private keys (-----BEGIN PRIVATE KEY-----) or JSON private JWKs`,
    );
  return blocks.map((block, i) => {
    const where = `${source} entry ${i + 1}`;
    const label = block[1]!;
    if (/PUBLIC KEY|CERTIFICATE/.test(label))
      throw new Error(
        `${where}: the private key is missing (a ${label.toLowerCase()} was given); give the private key, the JWKS publishes its public half`,
      );
    try {
      return { key: createPrivateKey(block[0]) };
    } catch {
      throw new Error(`${where} does not parse as a PEM private key`);
    }
  });
}

function withAlgorithm(entry: { kid?: string; key: KeyObject }, where: string): ParsedKey {
  const type = entry.key.asymmetricKeyType;
  if (type === "ec" && entry.key.asymmetricKeyDetails?.namedCurve === "prime256v1") return { ...entry, alg: "ES256" };
  if (type === "ed25519") return { ...entry, alg: "EdDSA" };
  const named = type === "ec" ? `EC ${entry.key.asymmetricKeyDetails?.namedCurve ?? "?"}` : (type ?? "unknown");
  throw new Error(`${where}: a ${named} key; only EC P-256 (ES256) and Ed25519 (EdDSA) keys are supported`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The ring from SIGNING_KEYS; otherwise (development and tests only; config.ts refuses production without
 * it) one ES256 key generated on first use and kept in `${dataDir}/keys/signing-keys.json` (mode 0600), so
 * receivers' cached JWKS stay valid across restarts. A key without `kid` gets its RFC 7638 thumbprint.
 */
export async function loadSigningKeyRing(args: {
  configured?: SecretValue<string>;
  dataDir: string;
  production: boolean;
}): Promise<SigningKeyRing> {
  if (args.configured) return buildRing(parseSigningKeys(args.configured.reveal()), "SIGNING_KEYS");
  if (args.production)
    throw new Error(
      "NODE_ENV=production needs SIGNING_KEYS: push JWTs and the agent card are never signed with a generated key in production",
    );
  const path = join(args.dataDir, SIGNING_KEY_FILE);
  const text = await readOrCreateSecretFile(path, () => {
    const jwk = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" });
    return `${JSON.stringify({ keys: [{ ...jwk, kid: `dev-${randomBytes(4).toString("hex")}` }] }, null, 2)}\n`;
  });
  return buildRing(parseSigningKeys(text, path), path);
}

async function buildRing(parsed: ParsedKey[], source: string): Promise<SigningKeyRing> {
  const keys = await Promise.all(
    parsed.map(async ({ kid, key, alg }): Promise<SigningKey> => {
      const { kty, crv, x, y } = await exportJWK(createPublicKey(key));
      const bare: JWK = { kty, crv, x, ...(y ? { y } : {}) };
      const id = kid ?? (await calculateJwkThumbprint(bare));
      return { kid: id, alg, privateKey: new SecretValue(key), publicJwk: { ...bare, kid: id, alg, use: "sig" } };
    }),
  );
  if (new Set(keys.map((k) => k.kid)).size !== keys.length) throw new Error(`${source}: key ids (kid) must be unique`);
  return new SigningKeyRing(keys, source);
}
