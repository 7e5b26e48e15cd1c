/**
 * Request headers that belong to the connection or the body's framing (and Host, which must match the checked
 * URL): an outbound client sets them itself, and nothing a caller or a definition configures may.
 */
export const CONNECTION_HEADERS: readonly string[] = [
  "host",
  "connection",
  "content-length",
  "transfer-encoding",
  "upgrade",
  "keep-alive",
  "te",
  "trailer",
  "expect",
  "proxy-connection",
  "proxy-authorization",
];
