/**
 * Outbound credentials of a named peer, as a provider: each call asks it for the request's headers, and a 401
 * from the peer tells it once (`onUnauthorized`) so a fetched token can be fetched again. One file per kind:
 * static bearer / API key (static-peer-credentials.ts), OAuth2 client credentials (oauth2-peer-credentials.ts).
 *
 * The provider of a peer is made by the A2A peer client on the peer's first call (a2a-peer-client.ts).
 * What a provider holds stays a SecretValue; `secrets()` lists the strings to redact from a peer's error text.
 */
export interface PeerCredentialsRequest {
  /** The header the peer's card named for an API key (recorded with the target). */
  apiKeyHeader?: string;
}

export interface PeerCredentials {
  /** The headers carrying the credentials for one call (lower-case names). */
  headersFor(request: PeerCredentialsRequest): Promise<Record<string, string>>;
  /**
   * The peer answered 401 / UNAUTHENTICATED to those headers. True when asking `headersFor` again may give
   * different ones (a fetched token is dropped); the call is then made once more, never more.
   */
  onUnauthorized(): boolean;
  /** The secret strings in use now (a key, a client secret, the current token): never to reach an error text. */
  secrets(): string[];
}
