/**
 * Push callbacks from peers: when a peer's card offers push notifications, an `a2a.invoke` node registers a push
 * config on the peer's task (inline with its send) pointing at `${A2A_PEER_CALLBACK_URL}/v1/peer-callbacks/{ourTaskId}`
 * with a per-task token. The token is never stored or logged: it is HMAC-SHA256 of our task id and the node visit's
 * idempotency key under the callback key (derived from the push encryption key, PUSH_ENCRYPTION_KEY or
 * DATA_DIR/keys), so every instance sharing that key recomputes it to check a push, a resend after a crash
 * (same message id, the peer answers its first task) carries the same token, and a copied token opens no other
 * task or visit.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { SecretValue } from "../secrets/secret-value.js";

export const PEER_CALLBACK_PATH = "/v1/peer-callbacks";

/** The callback URL of one of our tasks. */
export function peerCallbackUrl(baseUrl: string, taskId: string): string {
  return `${baseUrl.replace(/\/+$/, "")}${PEER_CALLBACK_PATH}/${encodeURIComponent(taskId)}`;
}

export class PeerCallbackKey {
  private readonly key: Buffer;

  /** `pushEncryptionKey`: the push secret box's key; the callback key is derived from it (never the key itself). */
  constructor(pushEncryptionKey: SecretValue<Buffer>) {
    this.key = createHmac("sha256", pushEncryptionKey.reveal()).update("openwop-a2a-host peer callback key v1").digest();
  }

  /** The token of one node visit (`visitKey` = the node's idempotency key `taskId:nodeId:visit`). */
  tokenFor(taskId: string, visitKey: string): string {
    return createHmac("sha256", this.key).update(JSON.stringify(["peer-callback-token", taskId, visitKey])).digest("base64url");
  }

  /** Whether `given` is the token of that visit, compared in constant time. */
  matches(taskId: string, visitKey: string, given: string): boolean {
    const a = createHash("sha256").update(this.tokenFor(taskId, visitKey)).digest();
    const b = createHash("sha256").update(given, "utf8").digest();
    return timingSafeEqual(a, b);
  }
}

/** How far a pushed signature's timestamp may drift from our clock (as our own push worker documents). */
export const PEER_SIGNATURE_TOLERANCE_SECONDS = 300;

/**
 * A peer's push signature as our own hosts sign (docs/a2a.md "Verifying a push"): `X-OpenWOP-Timestamp` an integer
 * within ±300 s, `X-OpenWOP-Signature` = `sha256=` + hex HMAC-SHA256 over `${timestamp}.${rawBody}` keyed with the
 * UTF-8 bytes of the peer's signing key, compared in constant time. (push/push-signature.ts signs the same format;
 * peer and push do not import each other.)
 */
export function verifyPeerSignature(args: { key: string; body: string; timestamp: string | undefined; signature: string | undefined; nowSeconds?: number }): boolean {
  const { key, body, timestamp, signature } = args;
  if (!timestamp || !/^\d{1,12}$/.test(timestamp) || !signature) return false;
  const now = args.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestamp)) > PEER_SIGNATURE_TOLERANCE_SECONDS) return false;
  const expected = Buffer.from(`sha256=${createHmac("sha256", Buffer.from(key, "utf8")).update(`${timestamp}.${body}`, "utf8").digest("hex")}`, "utf8");
  const given = Buffer.from(signature, "utf8");
  return expected.length === given.length && timingSafeEqual(expected, given);
}
