import { createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "X-OpenWOP-Signature";
export const TIMESTAMP_HEADER = "X-OpenWOP-Timestamp";
export const EVENT_ID_HEADER = "X-A2A-Event-Id";
export const NOTIFICATION_TOKEN_HEADER = "X-A2A-Notification-Token";

/** How far a receiver should let the signed timestamp drift from its clock. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** `sha256=<hex of HMAC-SHA256(key, "${timestamp}.${body}")>`, the key being the UTF-8 bytes of PUSH_SIGNING_KEY. */
export function signPushBody(key: string, timestamp: number, body: string): string {
  return `sha256=${createHmac("sha256", Buffer.from(key, "utf8")).update(`${timestamp}.${body}`, "utf8").digest("hex")}`;
}

/**
 * The receiver's check, as documented in the README: the timestamp is an integer within the tolerance of
 * `now`, and the signature matches in constant time. The body must be the raw bytes received.
 */
export function verifyPushSignature(args: {
  key: string;
  body: string;
  timestamp: string | undefined;
  signature: string | undefined;
  nowSeconds?: number;
  toleranceSeconds?: number;
}): boolean {
  const { key, body, timestamp, signature } = args;
  if (!timestamp || !/^\d{1,12}$/.test(timestamp) || !signature) return false;
  const now = args.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestamp)) > (args.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(signPushBody(key, Number(timestamp), body), "utf8");
  const given = Buffer.from(signature, "utf8");
  return expected.length === given.length && timingSafeEqual(expected, given);
}
