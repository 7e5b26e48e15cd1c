/**
 * The JWS algorithms we accept when checking a signature against published keys (OIDC tokens, peers' signed
 * pushes and cards): asymmetric only, so never `none` and never an HMAC keyed with a public value.
 */
export const ASYMMETRIC_JWS_ALGORITHMS: readonly string[] = [
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
];
