import { createHash } from "node:crypto";
import { originOf } from "./url-origin.js";

/**
 * One A2A version negotiation's outcome, as OpenWOP v2 interop.md "The audit event" (openwop/openwop 2549b715) has
 * every host record it on its own log: `negotiation.decided {protocol, peer, requested, negotiated, outcome,
 * reason}`. Content-free: `peer` is a digest of the peer's origin, never the origin; `reason` names the rule that
 * decided, never anything the peer said.
 */
export interface NegotiationDecided {
  protocol: "a2a";
  peer: string;
  requested: string;
  negotiated: string | null;
  outcome: "accepted" | "downgraded" | "refused";
  reason: string;
}

/** `sha256:<hex>` of the URL's origin (scheme, host, port): the same peer always digests the same. */
export function peerOriginDigest(url: string): string {
  return `sha256:${createHash("sha256").update(originOf(url)).digest("hex")}`;
}

/**
 * The decision of a call we make: the version we asked for (a pin, else our newest) and the one the peer's card
 * settled on; a lower one is a downgrade, recorded as such (no silent downgrade), none a refusal.
 */
export function outboundNegotiation(peerUrl: string, requested: string, negotiated: string | null): NegotiationDecided {
  const peer = peerOriginDigest(peerUrl);
  if (negotiated === null)
    return {
      protocol: "a2a",
      peer,
      requested,
      negotiated,
      outcome: "refused",
      reason: "peer-offers-no-acceptable-version",
    };
  if (negotiated === requested)
    return {
      protocol: "a2a",
      peer,
      requested,
      negotiated,
      outcome: "accepted",
      reason: "peer-offers-requested-version",
    };
  return {
    protocol: "a2a",
    peer,
    requested,
    negotiated,
    outcome: "downgraded",
    reason: "peer-offers-older-version-only",
  };
}

/** What an inbound call's `A2A-Version` may be recorded as: a version's shape, else "invalid" (never what it said). */
function recordable(requested: string): string {
  return /^\d{1,4}\.\d{1,4}(?:\.\d{1,4})?$/.test(requested) ? requested : "invalid";
}

/** `sha256:<hex>` of an inbound caller's network address: the same caller always digests the same. */
export function callerDigest(address: string): string {
  return `sha256:${createHash("sha256").update(address).digest("hex")}`;
}

/**
 * The decision on a call we receive: the version its `A2A-Version` named ("none" when it named none: A2A serves
 * such a call as 0.3, the card as AGENT_CARD_BARE says) and the one served, or none (refused: a version this host
 * does not serve).
 */
export function inboundNegotiation(
  peer: string,
  requested: string | undefined,
  negotiated: string | null,
): NegotiationDecided {
  const asked = requested === undefined ? "none" : recordable(requested);
  if (negotiated === null)
    return { protocol: "a2a", peer, requested: asked, negotiated, outcome: "refused", reason: "version-not-served" };
  return {
    protocol: "a2a",
    peer,
    requested: asked,
    negotiated,
    outcome: "accepted",
    reason: requested === undefined ? "no-version-named" : "version-served",
  };
}
