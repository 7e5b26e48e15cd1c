import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from "node:crypto";
import type { SecretValue } from "../secrets/secret-value.js";
import type { SealedSecrets } from "../store/push-config-store.js";

/** The caller's push secrets: sent to the webhook, never shown anywhere else. */
export interface PushSecrets {
  token?: string;
  credentials?: string;
}

export class PushSecretsError extends Error {
  override readonly name = "PushSecretsError";
}

/** A short public id for a key (which key sealed a value), not usable to recover the key. */
function keyId(key: Buffer): string {
  return createHash("sha256").update("openwop-a2a-host push key id v1\0").update(key).digest("hex").slice(0, 12);
}

/**
 * Seals push secrets with AES-256-GCM. The associated data binds each ciphertext to its config
 * (tenant, task, config id), so a sealed value copied onto another config does not open.
 * `fingerprint` is a salted digest (HMAC with a key derived from the encryption key), 32 hex characters.
 */
export class PushSecretBox {
  private readonly current: { kid: string; key: Buffer };
  private readonly byKid: Map<string, Buffer>;
  private readonly fingerprintKey: Buffer;

  constructor(encryptionKey: SecretValue<Buffer>, previous: SecretValue<Buffer>[] = []) {
    const key = encryptionKey.reveal();
    this.current = { kid: keyId(key), key };
    this.byKid = new Map([...previous.map((p) => [keyId(p.reveal()), p.reveal()] as const), [this.current.kid, key]]);
    this.fingerprintKey = createHmac("sha256", key).update("openwop-a2a-host push token fingerprint v1").digest();
  }

  seal(secrets: PushSecrets, aad: string): SealedSecrets {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.current.key, iv);
    cipher.setAAD(Buffer.from(aad, "utf8"));
    const data = Buffer.concat([cipher.update(JSON.stringify(secrets), "utf8"), cipher.final()]);
    return {
      v: 1,
      kid: this.current.kid,
      iv: iv.toString("base64"),
      tag: cipher.getAuthTag().toString("base64"),
      data: data.toString("base64"),
    };
  }

  open(sealed: SealedSecrets, aad: string): PushSecrets {
    const key = this.byKid.get(sealed.kid);
    if (!key)
      throw new PushSecretsError(
        `push secrets were sealed with key ${sealed.kid}, which is not configured (PUSH_ENCRYPTION_KEY / PUSH_ENCRYPTION_KEY_PREVIOUS)`,
      );
    try {
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(sealed.iv, "base64"));
      decipher.setAAD(Buffer.from(aad, "utf8"));
      decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
      const plain = Buffer.concat([decipher.update(Buffer.from(sealed.data, "base64")), decipher.final()]).toString(
        "utf8",
      );
      return JSON.parse(plain) as PushSecrets;
    } catch (err) {
      throw new PushSecretsError("push secrets failed authentication (tampered, or sealed for another config)", {
        cause: err,
      });
    }
  }

  fingerprint(token: string): string {
    return createHmac("sha256", this.fingerprintKey).update(token, "utf8").digest("hex").slice(0, 32);
  }
}

/** The associated data of one config's sealed secrets. */
export function secretsAad(tenant: string, taskId: string, configId: string): string {
  return JSON.stringify(["openwop-push-config", tenant, taskId, configId]);
}
