import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * The body signature our pushes carry and peers' pushes are checked with (docs/a2a.md "Verifying a push"):
 * `X-OpenWOP-Timestamp` is an integer (seconds), `X-OpenWOP-Signature` is `sha256=` + the hex HMAC-SHA256 over
 * `${timestamp}.${rawBody}` keyed with the UTF-8 bytes of the signing key. One module for both sides, so the
 * format we sign and the one we accept cannot drift apart.
 */
export const SIGNATURE_HEADER = "X-OpenWOP-Signature";
export const TIMESTAMP_HEADER = "X-OpenWOP-Timestamp";

/** How far a signed timestamp may drift from the receiver's clock. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** `sha256=<hex of HMAC-SHA256(key, "${timestamp}.${body}")>`. */
export function signBody(key: string, timestamp: number, body: string): string {
  return `sha256=${createHmac("sha256", Buffer.from(key, "utf8")).update(`${timestamp}.${body}`, "utf8").digest("hex")}`;
}

/**
 * The receiver's check: the timestamp is an integer within the tolerance of `now`, and the signature matches in
 * constant time. The body must be the raw bytes received.
 */
export function verifyBodySignature(args: {
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
  const expected = Buffer.from(signBody(key, Number(timestamp), body), "utf8");
  const given = Buffer.from(signature, "utf8");
  return expected.length === given.length && timingSafeEqual(expected, given);
}
