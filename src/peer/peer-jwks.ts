import { createLocalJWKSet, createRemoteJWKSet, customFetch, type JWK } from "jose";
import type { GuardedFetch } from "../egress/egress-fetch.js";

type RemoteKeys = ReturnType<typeof createRemoteJWKSet>;
/** A peer's key set as jose's verifiers take it: pinned (local) or remote. */
export type PeerKeySet = ReturnType<typeof createLocalJWKSet> | RemoteKeys;

/** How long a peer's JWKS answer is kept before it is fetched again (jose refetches at once for an unknown `kid`). */
const JWKS_CACHE_MS = 10 * 60 * 1000;
export const PEER_JWKS_TIMEOUT_MS = 5_000;

/**
 * Peers' key sets, shared by the checks of a peer's signed pushes and of its card: one fetch and one cache for the
 * same keys. Remote ones (jose: cached, refetched on an unknown `kid`) are one per JWKS URL; every fetch goes through
 * `fetch`, the egress client with the peer policy (egress/egress-fetch.ts): a JWKS URL is an outbound call like any
 * other, so a private or loopback address is refused unless the policy allows it.
 */
export class PeerJwks {
  private readonly keySets = new Map<string, RemoteKeys>();
  private readonly pinned = new Map<string, PeerKeySet>();

  constructor(private readonly fetch: GuardedFetch) {}

  /** The peer's remote key set at `jwksUrl`, made when first needed. */
  keys(jwksUrl: string): RemoteKeys {
    let keys = this.keySets.get(jwksUrl);
    if (!keys)
      this.keySets.set(
        jwksUrl,
        (keys = createRemoteJWKSet(new URL(jwksUrl), {
          cacheMaxAge: JWKS_CACHE_MS,
          timeoutDuration: PEER_JWKS_TIMEOUT_MS,
          [customFetch]: this.fetch,
        })),
      );
    return keys;
  }

  /**
   * A named peer's keys: the `jwks` pinned in its configuration, else its `jwksUrl` (the pinned ones win: an operator
   * who pinned keys did so not to trust what the URL serves); undefined for a peer with neither.
   */
  of(peer: {
    name: string;
    jwksUrl?: string;
    jwks?: { keys: Array<Record<string, unknown>> };
  }): PeerKeySet | undefined {
    if (peer.jwks) {
      let keys = this.pinned.get(peer.name);
      if (!keys) this.pinned.set(peer.name, (keys = createLocalJWKSet(peer.jwks as { keys: JWK[] })));
      return keys;
    }
    return peer.jwksUrl !== undefined ? this.keys(peer.jwksUrl) : undefined;
  }
}
