import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from "node:crypto";
import { join } from "node:path";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from "jose";
import type { SigningKeyListing } from "../domain/evidence-bundle.js";
import { readOrCreateSecretFile } from "./local-key-file.js";
import { SecretValue } from "./secret-value.js";

/** Where a development machine keeps its generated evidence key, relative to DATA_DIR. */
export const EVIDENCE_KEY_FILE = join("keys", "evidence-signing-key.json");

const KEY_ID = /^[A-Za-z0-9._~-]{1,128}$/;

/**
 * The Ed25519 key the host signs its evidence bundles with (conformance.md "Bundle v3"): a key of its own,
 * never the push or card key. Keys are parsed, generated and exported with jose; the attestation itself is
 * a raw Ed25519 signature over the canonical JSON (the spec's `sig` is the 64 signature bytes, not a JWS, so
 * there is no JWS header to sign), made by Node's own Ed25519.
 */
export class EvidenceKey {
  constructor(
    readonly keyId: string,
    private readonly privateKey: SecretValue<KeyObject>,
    /** base64url of the 32 public-key bytes. */
    readonly publicKey: string,
    /** For the start-up line: where the key came from (never the key). */
    readonly source: string,
  ) {}

  /** The 64-byte Ed25519 signature over `input`, base64url (86 characters). */
  sign(input: string): string {
    return sign(null, Buffer.from(input, "utf8"), this.privateKey.reveal()).toString("base64url");
  }

  listing(): SigningKeyListing {
    return { keyId: this.keyId, alg: "ed25519", publicKey: this.publicKey, use: "certification-bundle" };
  }
}

/** True when `sig` (base64url) is an Ed25519 signature of `input` by the published `publicKey` (base64url). */
export function verifyEd25519(publicKey: string, input: string, sig: string): boolean {
  try {
    const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: publicKey }, format: "jwk" });
    return verify(null, Buffer.from(input, "utf8"), key, Buffer.from(sig, "base64url"));
  } catch {
    return false;
  }
}

/**
 * EVIDENCE_SIGNING_KEY (a private Ed25519 JWK, or a PKCS#8 PEM; its `kid` is the keyId, else `evidence-` and
 * its RFC 7638 thumbprint); otherwise, outside production, one key generated on first use and kept in
 * `${dataDir}/keys/evidence-signing-key.json` (mode 0600) so every instance on that data directory and every
 * run of the evidence command sign with the same published key. In production without the setting there is no
 * key: the host lists none and signs no bundle.
 */
export async function loadEvidenceKey(args: {
  configured?: SecretValue<string>;
  dataDir: string;
  production: boolean;
}): Promise<EvidenceKey | undefined> {
  if (args.configured) return parseEvidenceKey(args.configured.reveal(), "EVIDENCE_SIGNING_KEY");
  if (args.production) return undefined;
  const path = join(args.dataDir, EVIDENCE_KEY_FILE);
  // Generated before the file is looked at (creation is synchronous); unused when the file already exists.
  const fresh = await exportJWK((await generateKeyPair("Ed25519", { extractable: true })).privateKey);
  const text = await readOrCreateSecretFile(path, () => `${JSON.stringify(fresh, null, 2)}\n`);
  return parseEvidenceKey(text, path);
}

/** The private key and its `kid`, synchronously (settings check it at load); errors name the source, never the key. */
export function privateEd25519(raw: string, source: string): { key: KeyObject; kid?: string } {
  const text = raw.includes("-----BEGIN") ? raw.replace(/\\n/g, "\n").trim() : raw.trim();
  let key: KeyObject;
  let kid: unknown;
  try {
    if (text.startsWith("{")) {
      const jwk = JSON.parse(text) as JWK & { kty: string };
      kid = jwk.kid;
      key = createPrivateKey({ key: jwk, format: "jwk" });
    } else key = createPrivateKey(text);
  } catch {
    throw new Error(`${source} does not parse as a private Ed25519 key (a private JWK with "d", or a PKCS#8 PEM)`);
  }
  if (key.asymmetricKeyType !== "ed25519")
    throw new Error(
      `${source}: a ${key.asymmetricKeyType ?? "unknown"} key; evidence bundles are signed with Ed25519 only`,
    );
  if (kid !== undefined && (typeof kid !== "string" || !KEY_ID.test(kid)))
    throw new Error(`${source}: "kid" must be 1-128 characters A-Z a-z 0-9 . _ ~ -`);
  return { key, ...(typeof kid === "string" ? { kid } : {}) };
}

export async function parseEvidenceKey(raw: string, source: string): Promise<EvidenceKey> {
  const { key, kid } = privateEd25519(raw, source);
  const { x } = await exportJWK(createPublicKey(key));
  const keyId = kid ?? `evidence-${await calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x: x! })}`;
  return new EvidenceKey(keyId, new SecretValue(key), x!, source);
}
