/**
 * Push callbacks from peers: when a peer's card offers push notifications, an `a2a.invoke` node registers a push
 * config on the peer's task (inline with its send) pointing at `${A2A_PEER_CALLBACK_URL}/v1/peer-callbacks/{ourTaskId}`
 * with a per-task token. The token is never stored or logged: it is HMAC-SHA256 of our task id and the node visit's
 * idempotency key under the callback key (A2A_PEER_CALLBACK_KEY, or outside production a key generated once under
 * DATA_DIR: peer-callback-key.ts; a key of its own, so rotating the push keys leaves open callbacks valid), so
 * every instance sharing that key recomputes it to check a push, a resend after a crash (same message id, the
 * peer answers its first task) carries the same token, and a copied token opens no other task or visit.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { SecretValue } from "../secrets/secret-value.js";

export const PEER_CALLBACK_PATH = "/v1/peer-callbacks";

/** The callback URL of one of our tasks. */
export function peerCallbackUrl(baseUrl: string, taskId: string): string {
  return `${baseUrl.replace(/\/+$/, "")}${PEER_CALLBACK_PATH}/${encodeURIComponent(taskId)}`;
}

export class PeerCallbackKey {
  /** `key`: A2A_PEER_CALLBACK_KEY (or the generated dev key), 32 bytes; never the push key nor derived from it. */
  constructor(private readonly key: SecretValue<Buffer>) {}

  /** The token of one node visit (`visitKey` = the node's idempotency key `taskId:nodeId:visit`). */
  tokenFor(taskId: string, visitKey: string): string {
    return createHmac("sha256", this.key.reveal())
      .update(JSON.stringify(["peer-callback-token", taskId, visitKey]))
      .digest("base64url");
  }

  /** Whether `given` is the token of that visit, compared in constant time. */
  matches(taskId: string, visitKey: string, given: string): boolean {
    const a = createHash("sha256").update(this.tokenFor(taskId, visitKey)).digest();
    const b = createHash("sha256").update(given, "utf8").digest();
    return timingSafeEqual(a, b);
  }
}
