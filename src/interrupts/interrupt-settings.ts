import type { EnvReader } from "../domain/env-settings.js";
import { SecretValue } from "../secrets/secret-value.js";
import { parseInterruptTokenKeys } from "./interrupt-token-keys.js";
import type { InterruptTokenKey } from "./interrupt-tokens.js";

/** Signed interrupt tokens: configured keys (the first signs, all verify) and the lifetime of an issued token. */
export interface InterruptTokenSettings {
  keys?: SecretValue<InterruptTokenKey[]>;
  ttlMs: number;
}

/** INTERRUPT_TOKEN_KEYS and INTERRUPT_TOKEN_TTL_SECONDS; production never signs with a generated key. */
export function readInterruptTokenSettings(env: EnvReader, production: boolean): InterruptTokenSettings {
  const raw = env.raw("INTERRUPT_TOKEN_KEYS");
  let keys: InterruptTokenKey[] | undefined;
  try {
    keys = raw !== undefined ? parseInterruptTokenKeys(raw) : undefined;
  } catch (err) {
    env.problem((err as Error).message);
  }
  if (production && raw === undefined) {
    env.problem(
      "NODE_ENV=production needs INTERRUPT_TOKEN_KEYS (kid:base64secret,...): interrupt tokens are never signed with a generated key in production",
    );
  }
  return {
    ...(keys ? { keys: new SecretValue(keys) } : {}),
    ttlMs: env.int("INTERRUPT_TOKEN_TTL_SECONDS", 30 * 60, 1, 7 * 24 * 60 * 60) * 1000,
  };
}
