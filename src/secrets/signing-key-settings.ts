import type { EnvReader } from "../domain/env-settings.js";
import { parseSigningKeys } from "./signing-key-ring.js";
import { SecretValue } from "./secret-value.js";

/** SIGNING_KEYS, checked at load (every bad entry is a start-up problem) and kept as a secret. */
export interface SigningKeySettings {
  keys?: SecretValue<string>;
}

/** The host's asymmetric signing keys (push JWTs, the card's JWS); production never signs with a generated key. */
export function readSigningKeySettings(env: EnvReader, production: boolean): SigningKeySettings {
  const raw = env.raw("SIGNING_KEYS");
  if (raw === undefined) {
    if (production)
      env.problem(
        "NODE_ENV=production needs SIGNING_KEYS (PEM or JWK private keys, EC P-256 or Ed25519; the first signs, all are published at /.well-known/jwks.json): push JWTs and the agent card are never signed with a generated key in production",
      );
    return {};
  }
  try {
    parseSigningKeys(raw);
  } catch (err) {
    env.problem((err as Error).message);
    return {};
  }
  return { keys: new SecretValue(raw) };
}
