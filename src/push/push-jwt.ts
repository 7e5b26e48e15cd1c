import { createHash, randomUUID } from "node:crypto";
import { SignJWT } from "jose";
import type { SigningKeyRing } from "../secrets/signing-key-ring.js";

/** A push JWT's lifetime: the A2A push flow wants it short (the receiver also checks `iat` and `jti`). */
export const PUSH_JWT_TTL_SECONDS = 300;

/**
 * `Authorization: Bearer <JWT>` for a config that asks for Bearer and carries no credentials (A2A push
 * authentication): signed by the ring's current key (`kid` in the header), `iss` the host's public URL,
 * `aud` the webhook, `iat`/`exp` five minutes apart, a fresh `jti` per delivery attempt and the `taskId`, and
 * `request_body_sha256` (hex SHA-256 of the exact body, as A2A's sample push senders put it), so a captured
 * token cannot carry another body. The receiver verifies it with the keys at /.well-known/jwks.json.
 */
export class PushJwtSigner {
  constructor(
    private readonly keys: SigningKeyRing,
    private readonly issuer: string,
  ) {}

  async sign(args: { audience: string; taskId: string; body: string; nowSeconds: number }): Promise<string> {
    const key = this.keys.current;
    return new SignJWT({
      taskId: args.taskId,
      request_body_sha256: createHash("sha256").update(args.body, "utf8").digest("hex"),
    })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT" })
      .setIssuer(this.issuer)
      .setAudience(args.audience)
      .setIssuedAt(args.nowSeconds)
      .setExpirationTime(args.nowSeconds + PUSH_JWT_TTL_SECONDS)
      .setJti(randomUUID())
      .sign(key.privateKey.reveal());
  }
}

/** Whether a config's `authentication.schemes` names Bearer (auth-scheme names are case-insensitive, RFC 9110 §11.1). */
export function wantsBearer(schemes: readonly string[] | null | undefined): boolean {
  return schemes?.some((s) => s.toLowerCase() === "bearer") ?? false;
}
