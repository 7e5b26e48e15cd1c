import { randomBytes } from "node:crypto";
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from "jose";
import { SCOPES } from "../auth/principal.js";

/**
 * Every key a production start needs, freshly generated (`openwop-a2a-host keys`), each in the form its loader
 * takes: INTERRUPT_TOKEN_KEYS `kid:base64` (interrupt-token-keys.ts), SIGNING_KEYS a private JWK
 * (signing-key-ring.ts), PUSH_ENCRYPTION_KEY and A2A_PEER_CALLBACK_KEY 32 bytes in base64 (key-256.ts),
 * PUSH_SIGNING_KEY 48 random bytes in base64 (64 characters: the loader wants at least 32), API_KEYS one key for
 * the operator with every scope (api-key-authenticator.ts). Not MONGODB_URI or PUBLIC_URL: those are addresses the
 * operator knows, not keys. The order is the order they are printed in.
 */
export interface ProductionKeys {
  API_KEYS: string;
  INTERRUPT_TOKEN_KEYS: string;
  SIGNING_KEYS: string;
  PUSH_ENCRYPTION_KEY: string;
  PUSH_SIGNING_KEY: string;
  A2A_PEER_CALLBACK_KEY: string;
}

/** `now` names the keys (kids carry the date), so a rotation later tells the old key from the new one. */
export async function generateProductionKeys(now = new Date()): Promise<ProductionKeys> {
  const day = now.toISOString().slice(0, 10).replaceAll("-", "");
  // ES256, the host's default: every JOSE library receivers use verifies it (EdDSA is not yet everywhere).
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = `${day}-${(await calculateJwkThumbprint(jwk)).slice(0, 16)}`;
  return {
    API_KEYS: JSON.stringify([
      { id: "ops", tenant: "default", scopes: [...SCOPES], key: randomBytes(32).toString("base64url") },
    ]),
    INTERRUPT_TOKEN_KEYS: `${day}-${randomBytes(4).toString("hex")}:${randomBytes(32).toString("base64")}`,
    SIGNING_KEYS: JSON.stringify({ ...jwk, kid, alg: "ES256" }),
    PUSH_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    PUSH_SIGNING_KEY: randomBytes(48).toString("base64"),
    A2A_PEER_CALLBACK_KEY: randomBytes(32).toString("base64"),
  };
}
