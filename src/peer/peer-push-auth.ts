/**
 * How a named peer authenticates its pushes to our callback (peer-callbacks.ts), which decides both how our push
 * config is registered with the peer and what the receiver expects (peer-push-trust.ts). One decision, read by both:
 *
 *   - `jwt`: the peer signs each push with a key of its JWKS (its `jwksUrl`, or the `jwks` pinned for it), A2A's
 *     own push flow. We register `authentication: {schemes: ["Bearer"]}` WITHOUT credentials, which asks the peer to
 *     sign a Bearer JWT itself (our own push worker does so: push/push-jwt.ts), and the per-visit token in `token`
 *     (sent back as `X-A2A-Notification-Token`). Were the token also the Bearer credentials, a peer would send that
 *     static value instead of a JWT, and a peer with keys must sign: every push would be refused.
 *   - `static-bearer`: the peer can only send the credentials it is given. We register the token both in `token`
 *     and as Bearer `credentials`, so it arrives whichever header the peer sends. Such a push proves only the token:
 *     it is a hint (or HMAC-signed, with `signingKey`), never checked for a JWT.
 *
 * A peer with keys is `jwt` unless configured `"pushAuth": "static-bearer"` (its keys then verify its card only); a
 * peer without keys, or a node that names an agent card directly, is `static-bearer`.
 */
export const PEER_PUSH_AUTHS = ["jwt", "static-bearer"] as const;
export type PeerPushAuth = (typeof PEER_PUSH_AUTHS)[number];

/** What of a peer's configuration (peer-config.ts) decides it: its keys (a JWKS URL or pinned public keys) and the setting. */
interface PeerPushAuthSettings {
  jwksUrl?: string;
  jwks?: unknown;
  pushAuth?: PeerPushAuth;
}

/** How `peer` (undefined: no named peer) authenticates its pushes: as configured, else `jwt` exactly when it has keys. */
export function pushAuthOf(peer: PeerPushAuthSettings | undefined): PeerPushAuth {
  if (!peer) return "static-bearer";
  return peer.pushAuth ?? (peer.jwksUrl !== undefined || peer.jwks !== undefined ? "jwt" : "static-bearer");
}
