import { createRemoteJWKSet } from "jose";

type RemoteKeys = ReturnType<typeof createRemoteJWKSet>;

/** How long a peer's JWKS answer is kept before it is fetched again (jose refetches at once for an unknown `kid`). */
const JWKS_CACHE_MS = 10 * 60 * 1000;
const JWKS_TIMEOUT_MS = 5_000;

// One key set per JWKS URL, shared by the checks of a peer's signed pushes and of its card: one fetch and one
// cache for the same keys (the key set holds public keys only, so sharing it between hosts in one process is safe).
const keySets = new Map<string, RemoteKeys>();

/** The peer's remote key set at `jwksUrl` (jose: cached, refetched on an unknown `kid`), made when first needed. */
export function peerRemoteKeys(jwksUrl: string): RemoteKeys {
  let keys = keySets.get(jwksUrl);
  if (!keys) keySets.set(jwksUrl, (keys = createRemoteJWKSet(new URL(jwksUrl), { cacheMaxAge: JWKS_CACHE_MS, timeoutDuration: JWKS_TIMEOUT_MS })));
  return keys;
}
