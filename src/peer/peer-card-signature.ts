/**
 * `cardSignature: "required"` for a named peer: its agent card must carry an A2A AgentCardSignature (a JWS with
 * the payload detached: the RFC 8785 canonical JSON of the card without `signatures`) that verifies with the
 * peer's keys: the `jwks` pinned in its configuration, else its `jwksUrl` (jose's remote key set: cached,
 * refetched on an unknown `kid`). The card's own `jku` is never followed: a forged card would name its own keys.
 * One signature that verifies is enough (a peer rotating its keys may carry two).
 */
import { errors as joseErrors, flattenedVerify } from "jose";
import { ASYMMETRIC_JWS_ALGORITHMS } from "../domain/asymmetric-algorithms.js";
import { canonicalJson } from "../domain/canonical-json.js";
import type { PeerConfig } from "./peer-config.js";
import { PeerCallError } from "./peer-http-client.js";
import type { PeerJwks } from "./peer-jwks.js";

export class PeerCardSignatures {
  /** `jwks`: the host's peer key sets, fetched through the egress client with the peer policy. */
  constructor(private readonly jwks: PeerJwks) {}

  /** Resolves when the card is signed by the peer's keys (or the peer does not require it); else a PeerCallError. */
  async check(peer: PeerConfig, card: unknown): Promise<void> {
    if (peer.cardSignature !== "required") return;
    const document =
      typeof card === "object" && card !== null && !Array.isArray(card) ? (card as Record<string, unknown>) : {};
    const signatures = Array.isArray(document["signatures"]) ? (document["signatures"] as unknown[]) : [];
    const where = `the agent card of peer "${peer.name}"`;
    if (signatures.length === 0)
      throw new PeerCallError(
        `${where} carries no signatures, and this peer's card must be signed (cardSignature: required)`,
        "unauthorized",
        false,
      );
    const { signatures: _signatures, ...unsigned } = document;
    const payload = Buffer.from(canonicalJson(unsigned), "utf8").toString("base64url");
    const keys = this.jwks.of(peer);
    if (!keys)
      throw new PeerCallError(
        `${where} cannot be checked: the peer has no keys ("jwksUrl" or pinned "jwks")`,
        "unauthorized",
        false,
      );
    let reason = "no signature verifies";
    for (const entry of signatures) {
      const sig = typeof entry === "object" && entry !== null ? (entry as Record<string, unknown>) : {};
      if (typeof sig["protected"] !== "string" || typeof sig["signature"] !== "string") {
        reason = "a signature is not {protected, signature}";
        continue;
      }
      try {
        await flattenedVerify(
          {
            protected: sig["protected"],
            signature: sig["signature"],
            payload,
            ...(isObject(sig["header"]) ? { header: sig["header"] } : {}),
          },
          keys,
          { algorithms: [...ASYMMETRIC_JWS_ALGORITHMS] },
        );
        return;
      } catch (err) {
        // The egress guard refused the JWKS URL: configuration, final.
        if (err instanceof PeerCallError && err.kind === "egress")
          throw new PeerCallError(`${where}: the peer's keys cannot be fetched: ${err.message}`, "egress", false);
        // The keys could not be fetched: the same call may succeed later, unlike a signature that is wrong.
        if (
          !(err instanceof joseErrors.JOSEError) ||
          err instanceof joseErrors.JWKSTimeout ||
          err instanceof joseErrors.JWKSInvalid
        ) {
          throw new PeerCallError(
            `${where}: the peer's keys (${peer.jwksUrl ?? "jwks"}) could not be read to check its signature`,
            "connection",
            true,
          );
        }
        reason = `no signature verifies with the peer's keys (${err.code})`;
      }
    }
    throw new PeerCallError(`${where} is refused: ${reason} (cardSignature: required)`, "unauthorized", false);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
