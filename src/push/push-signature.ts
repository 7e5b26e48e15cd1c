/**
 * The headers of a push delivery. The body signature itself is secrets/hmac-signature.ts (the same module checks
 * peers' pushes); its names here are the ones the push side and its docs use.
 */
export {
  SIGNATURE_HEADER,
  SIGNATURE_TOLERANCE_SECONDS,
  TIMESTAMP_HEADER,
  signBody as signPushBody,
  verifyBodySignature as verifyPushSignature,
} from "../secrets/hmac-signature.js";

export const EVENT_ID_HEADER = "X-A2A-Event-Id";
export const NOTIFICATION_TOKEN_HEADER = "X-A2A-Notification-Token";
