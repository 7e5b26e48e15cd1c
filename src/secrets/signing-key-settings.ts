import type { EnvReader } from "../domain/env-settings.js";
import { privateEd25519 } from "./evidence-key.js";
import { parseSigningKeys } from "./signing-key-ring.js";
import { SecretValue } from "./secret-value.js";

/** SIGNING_KEYS, checked at load (every bad entry is a start-up problem) and kept as a secret. */
export interface SigningKeySettings {
  keys?: SecretValue<string>;
  /** EVIDENCE_SIGNING_KEY: the Ed25519 key of evidence bundles (secrets/evidence-key.ts); listed in discovery `signingKeys[]`. */
  evidenceKey?: SecretValue<string>;
}

/** The host's asymmetric signing keys (push JWTs, the card's JWS); production never signs with a generated key. */
export function readSigningKeySettings(env: EnvReader, production: boolean): SigningKeySettings {
  const evidence = readEvidenceKey(env);
  return { ...readRing(env, production), ...(evidence ? { evidenceKey: evidence } : {}) };
}

/** EVIDENCE_SIGNING_KEY, optional everywhere: without it production lists no key and signs no bundle. */
function readEvidenceKey(env: EnvReader): SecretValue<string> | undefined {
  const raw = env.raw("EVIDENCE_SIGNING_KEY");
  if (raw === undefined) return undefined;
  try {
    privateEd25519(raw, "EVIDENCE_SIGNING_KEY");
  } catch (err) {
    env.problem((err as Error).message);
    return undefined;
  }
  return new SecretValue(raw);
}

function readRing(env: EnvReader, production: boolean): Pick<SigningKeySettings, "keys"> {
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
