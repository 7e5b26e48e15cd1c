/** A static bearer token or API key from the peer's configuration (the key in the header the card names). */
import type { PeerCredentialSettings } from "./peer-config.js";
import type { PeerCredentials } from "./peer-credentials.js";
import { PeerCallError } from "./peer-http-client.js";

export function createStaticPeerCredentials(
  peer: string,
  settings: Extract<PeerCredentialSettings, { kind: "bearer" | "apiKey" }>,
): PeerCredentials {
  return {
    async headersFor(request) {
      if (settings.kind === "bearer") return { authorization: `Bearer ${settings.token.reveal()}` };
      const header = settings.header ?? request.apiKeyHeader;
      if (!header)
        throw new PeerCallError(
          `the header for peer "${peer}"'s API key is unknown (set credentials.header)`,
          "unsupported",
          false,
        );
      return { [header.toLowerCase()]: settings.key.reveal() };
    },
    // The same key again would get the same answer.
    onUnauthorized: () => false,
    secrets: () => [settings.kind === "bearer" ? settings.token.reveal() : settings.key.reveal()],
  };
}
