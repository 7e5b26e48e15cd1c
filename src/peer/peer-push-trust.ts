/**
 * Whether a peer's push body may be taken as the peer's word. The per-visit token (peer-callbacks.ts) only says
 * who may wake us: a peer hands it to its push worker, and may show it to whoever reads its task's push config.
 * So the body is trusted only when it is signed with a key the operator configured for that peer:
 *
 *   - `signingKey`: `X-OpenWOP-Signature` over `${X-OpenWOP-Timestamp}.${rawBody}` (as our own hosts sign);
 *   - keys (`jwks` pinned, else `jwksUrl`) with push auth "jwt" (peer-push-auth.ts, the default with keys):
 *                   `Authorization: Bearer <JWT>` verified against those keys (jose), issued within the signature
 *                   tolerance, with a `request_body_sha256` claim naming the body it covers (the hex SHA-256 of the
 *                   raw body, or of its canonical JSON as the A2A samples compute it). The token then comes in
 *                   `X-A2A-Notification-Token`: that is how our callback is registered with such a peer.
 *
 * A peer with a key configured must sign: an unsigned or wrongly signed push is refused. A peer without one, or
 * one configured `"pushAuth": "static-bearer"` (it can only send the token back), is "unsigned": its push is a
 * hint (the receiver reads the peer's task before committing anything of it).
 */
import { createHash } from "node:crypto";
import { errors as joseErrors, jwtVerify } from "jose";
import { ASYMMETRIC_JWS_ALGORITHMS } from "../domain/asymmetric-algorithms.js";
import { canonicalJson } from "../domain/canonical-json.js";
import { SIGNATURE_TOLERANCE_SECONDS, verifyBodySignature } from "../secrets/hmac-signature.js";
import type { PeerConfig } from "./peer-config.js";
import type { PeerJwks, PeerKeySet } from "./peer-jwks.js";
import { pushAuthOf } from "./peer-push-auth.js";

/** `proof`: the signature or JWT that made the push trusted (to recognise a replay of it; never logged). */
export type PushTrust =
  | { verdict: "signed"; by: "hmac" | "jwks"; proof: string }
  | { verdict: "unsigned" }
  | { verdict: "refused"; why: string };

export interface SignedPush {
  headers: Readonly<Record<string, string | undefined>>;
  body: string;
}

/** Signed pushes remembered against replay (each for the signature tolerance); the oldest go first past this. */
const MAX_REMEMBERED = 10_000;

export class PeerPushTrust {
  /** SHA-256 of the proofs of signed pushes committed here → until when (seconds) a replay of one is recognised. */
  private readonly committed = new Map<string, number>();

  constructor(
    private readonly peers: ReadonlyMap<string, PeerConfig>,
    /** The host's peer key sets (fetched through the egress client with the peer policy). */
    private readonly jwks: PeerJwks,
    private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

  /** The verdict on a push for a visit that called `peerName` (undefined: a node that named its agent card directly). */
  async check(peerName: string | undefined, push: SignedPush): Promise<PushTrust> {
    const peer = peerName !== undefined ? this.peers.get(peerName) : undefined;
    // A peer that signs with a JWT: its pushes are checked against its keys (a static-bearer peer's keys verify its card only).
    const keys = peer && pushAuthOf(peer) === "jwt" ? this.jwks.of(peer) : undefined;
    if (!peer || (!peer.signingKey && !keys)) return { verdict: "unsigned" };
    const signature = push.headers["x-openwop-signature"];
    if (
      peer.signingKey &&
      signature &&
      verifyBodySignature({
        key: peer.signingKey.reveal(),
        body: push.body,
        timestamp: push.headers["x-openwop-timestamp"],
        signature,
        nowSeconds: this.nowSeconds(),
      })
    ) {
      return { verdict: "signed", by: "hmac", proof: signature };
    }
    if (keys) {
      const checked = await this.checkJwt(keys, push);
      return "jwt" in checked
        ? { verdict: "signed", by: "jwks", proof: checked.jwt }
        : { verdict: "refused", why: checked.why };
    }
    return { verdict: "refused", why: "the signature is missing or wrong" };
  }

  /**
   * Whether this signed push was committed here before (a replay: the same signature within its tolerance). The
   * state check of the receiver catches a replay on another instance as long as the peer's state has not moved
   * back; this catches the rest on the instance that committed it.
   */
  isReplay(proof: string): boolean {
    const until = this.committed.get(digest(proof));
    return until !== undefined && until >= this.nowSeconds();
  }

  /** Remembers a signed push once committed (not before: a push refused for now, 503, must be retryable as is). */
  remember(proof: string): void {
    const now = this.nowSeconds();
    for (const [key, until] of this.committed) {
      if (until >= now && this.committed.size < MAX_REMEMBERED) break;
      this.committed.delete(key);
    }
    this.committed.set(digest(proof), now + 2 * SIGNATURE_TOLERANCE_SECONDS);
  }

  /** The push's JWT when it is the peer's and covers this body; else why not (no secret in it). */
  private async checkJwt(keys: PeerKeySet, push: SignedPush): Promise<{ jwt: string } | { why: string }> {
    const jwt = /^Bearer\s+([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)\s*$/i.exec(
      push.headers["authorization"] ?? "",
    )?.[1];
    if (!jwt) return { why: "no signed JWT (Authorization: Bearer) from a peer with a JWKS" };
    let claims;
    try {
      ({ payload: claims } = await jwtVerify(jwt, keys, {
        algorithms: [...ASYMMETRIC_JWS_ALGORITHMS],
        maxTokenAge: SIGNATURE_TOLERANCE_SECONDS,
        clockTolerance: 30,
        currentDate: new Date(this.nowSeconds() * 1000),
      }));
    } catch (err) {
      return {
        why:
          err instanceof joseErrors.JOSEError
            ? `the JWT does not verify against the peer's JWKS (${err.code})`
            : "the JWT does not verify against the peer's JWKS",
      };
    }
    const claimed = claims["request_body_sha256"];
    if (typeof claimed !== "string") return { why: "the JWT has no request_body_sha256 claim" };
    return bodyHashes(push.body).includes(claimed.toLowerCase())
      ? { jwt }
      : { why: "the JWT's request_body_sha256 does not match the body" };
  }
}

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest("base64url");

/** The hex SHA-256 of the raw body, and of its canonical JSON (what A2A sample servers hash). */
function bodyHashes(body: string): string[] {
  const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
  const hashes = [sha(body)];
  try {
    hashes.push(sha(canonicalJson(JSON.parse(body))));
  } catch {
    // Not JSON: only the raw bytes can be covered (the decoder refuses such a body anyway).
  }
  return hashes;
}
