import { createRemoteJWKSet, customFetch } from "jose";
import type { GuardedFetch } from "../egress/egress-fetch.js";

type RemoteKeys = ReturnType<typeof createRemoteJWKSet>;

/** How long a peer's JWKS answer is kept before it is fetched again (jose refetches at once for an unknown `kid`). */
const JWKS_CACHE_MS = 10 * 60 * 1000;
export const PEER_JWKS_TIMEOUT_MS = 5_000;

/**
 * Peers' remote key sets (jose: cached, refetched on an unknown `kid`), one per JWKS URL, shared by the checks of
 * a peer's signed pushes and of its card: one fetch and one cache for the same keys. Every fetch goes through
 * `fetch`, the egress client with the peer policy (egress/egress-fetch.ts): a JWKS URL is an outbound call like
 * any other, so a private or loopback address is refused unless the policy allows it.
 */
export class PeerJwks {
  private readonly keySets = new Map<string, RemoteKeys>();

  constructor(private readonly fetch: GuardedFetch) {}

  /** The peer's remote key set at `jwksUrl`, made when first needed. */
  keys(jwksUrl: string): RemoteKeys {
    let keys = this.keySets.get(jwksUrl);
    if (!keys) this.keySets.set(jwksUrl, (keys = createRemoteJWKSet(new URL(jwksUrl), { cacheMaxAge: JWKS_CACHE_MS, timeoutDuration: PEER_JWKS_TIMEOUT_MS, [customFetch]: this.fetch })));
    return keys;
  }
}
