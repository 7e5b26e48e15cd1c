import { DomainError } from "../domain/errors.js";
import { apiKeyAuthenticator } from "./api-key-authenticator.js";
import { chain, type AuthDescription, type Authenticator } from "./authenticator.js";
import type { AuthSettings } from "./auth-settings.js";
import { ClientCertificateAuthenticator, type ClientCertificateEntry } from "./client-certificate-authenticator.js";
import { devAuthenticator } from "./dev-authenticator.js";
import { oidcAuthenticator, type OidcObserver } from "./oidc-authenticator.js";

/**
 * The host's way in from its settings: dev (AUTH=off, no client certificates), or the configured
 * authenticators side by side. A mapped, verified client certificate decides first; then a JWT-shaped bearer
 * goes to OIDC, anything else to API keys (with certificates alone, every other caller is refused).
 */
export function hostAuthenticator(settings: AuthSettings, clientPrincipals: readonly ClientCertificateEntry[] = [], observers: { oidc?: OidcObserver } = {}): Authenticator {
  if (settings.mode === "off" && clientPrincipals.length === 0) return devAuthenticator;
  const parts: Authenticator[] = [];
  if (clientPrincipals.length > 0) parts.push(clientCertificatePort(new ClientCertificateAuthenticator(clientPrincipals), clientPrincipals));
  if (settings.oidc) parts.push(oidcAuthenticator(settings.oidc, observers.oidc ? { observer: observers.oidc } : {}));
  if (settings.keys.length > 0) parts.push(apiKeyAuthenticator(settings.keys));
  return chain(...parts);
}

/** Client certificates on the port: recognised only when the connection's verified certificate is mapped. */
function clientCertificatePort(certificates: ClientCertificateAuthenticator, entries: readonly ClientCertificateEntry[]): Authenticator {
  const description: AuthDescription = {
    enabled: true,
    schemes: { mtls: { type: "mutualTLS", description: "A client certificate issued by the operator's CA (TLS_CLIENT_CA_FILE), mapped in TLS_CLIENT_PRINCIPALS" } },
    requirements: [{ mtls: [] }],
    tenants: [...new Set(entries.map((e) => e.tenant))],
    allTenantsHolders: [],
    summary: `client certificates (${entries.length})`,
  };
  return {
    recognises: (request) => request.peerCertificate !== undefined && certificates.authenticate(request) !== undefined,
    authenticate(request) {
      const principal = certificates.authenticate(request);
      if (!principal) throw new DomainError("unauthenticated", "missing credentials: no mapped client certificate");
      return principal;
    },
    describe: () => description,
  };
}
