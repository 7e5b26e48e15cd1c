import { DomainError } from "../domain/errors.js";
import { apiKeyAuthenticator } from "./api-key-authenticator.js";
import { chain, type AuthDescription, type Authenticator, type HeaderLookup } from "./authenticator.js";
import type { AuthSettings } from "./auth-settings.js";
import {
  certificateNames,
  ClientCertificateAuthenticator,
  type ClientCertificateEntry,
} from "./client-certificate-authenticator.js";
import { devAuthenticator } from "./dev-authenticator.js";
import { oidcAuthenticator, type OidcObserver } from "./oidc-authenticator.js";

/** What the client-certificate port tells the host's log (auth/ has no logger: observed/observed-trust.ts writes the line). */
export interface CertificateObserver {
  /** A verified certificate that no entry maps was the request's only credential, and was refused: the operator can map it. */
  unmapped(subject: string, subjectAltNames: string[]): void;
}

/**
 * The host's way in from its settings: dev (AUTH=off, no client certificates), or the configured
 * authenticators side by side. A verified client certificate decides first when it is mapped, or when the
 * request carries no other credential (then it is refused as unmapped); then a JWT-shaped bearer goes to OIDC,
 * anything else to API keys (with certificates alone, every other caller is refused).
 */
export function hostAuthenticator(
  settings: AuthSettings,
  clientPrincipals: readonly ClientCertificateEntry[] = [],
  observers: { oidc?: OidcObserver; certificates?: CertificateObserver } = {},
): Authenticator {
  if (settings.mode === "off" && clientPrincipals.length === 0) return devAuthenticator;
  const parts: Authenticator[] = [];
  if (clientPrincipals.length > 0)
    parts.push(
      clientCertificatePort(
        new ClientCertificateAuthenticator(clientPrincipals),
        clientPrincipals,
        observers.certificates,
      ),
    );
  if (settings.oidc) parts.push(oidcAuthenticator(settings.oidc, observers.oidc ? { observer: observers.oidc } : {}));
  if (settings.keys.length > 0) parts.push(apiKeyAuthenticator(settings.keys));
  return chain(...parts);
}

/**
 * Client certificates on the port: recognised when the connection's verified certificate is mapped, or is the
 * request's only credential. An unmapped one grants nothing; its caller learns that, the operator (who can map
 * it) learns which certificate it was.
 */
function clientCertificatePort(
  certificates: ClientCertificateAuthenticator,
  entries: readonly ClientCertificateEntry[],
  observer: CertificateObserver | undefined,
): Authenticator {
  const description: AuthDescription = {
    enabled: true,
    // In the caller's terms: the card is read by callers, who never see the host's settings.
    schemes: {
      mtls: {
        type: "mutualTLS",
        description:
          "A client certificate from a CA the operator of this agent trusts, registered with the operator for a tenant and scopes",
      },
    },
    requirements: [{ mtls: [] }],
    tenants: [...new Set(entries.map((e) => e.tenant))],
    allTenantsHolders: [],
    summary: `client certificates (${entries.length})`,
    asks: "a client certificate",
  };
  return {
    recognises: (request) =>
      request.peerCertificate !== undefined &&
      (!otherCredential(request.headers) || certificates.authenticate(request) !== undefined),
    authenticate(request) {
      const principal = certificates.authenticate(request);
      if (principal) return principal;
      if (!request.peerCertificate)
        throw new DomainError("unauthenticated", "missing credentials: present a client certificate");
      const { subject, subjectAltNames } = certificateNames(request.peerCertificate);
      observer?.unmapped(subject, subjectAltNames);
      throw new DomainError("unauthenticated", "the client certificate is not mapped to a principal");
    },
    describe: () => description,
  };
}

/** Credentials in headers (a bearer token or API key): with one, an unmapped certificate leaves the decision to it. */
function otherCredential(headers: HeaderLookup): boolean {
  return headers("authorization") !== undefined || headers("x-api-key") !== undefined;
}
