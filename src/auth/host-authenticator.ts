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
import type { Principal } from "./principal.js";
import { oidcAuthenticator, type OidcObserver } from "./oidc-authenticator.js";

/** What the client-certificate port tells the host's log (auth/ has no logger: observed/observed-trust.ts writes the line). */
export interface CertificateObserver {
  /** A verified certificate that no entry maps was the request's only credential, and was refused: the operator can map it. */
  unmapped(subject: string, subjectAltNames: string[]): void;
}

/**
 * The host's way in from its settings: dev (AUTH=off, no client certificates), or the configured
 * authenticators side by side. A verified client certificate alone decides (a mapped one is its entry's caller,
 * an unmapped one is refused); with a bearer token or API key beside it, the header credential decides who calls
 * and with which scopes (a JWT-shaped bearer goes to OIDC, anything else to API keys), and the certificate
 * authenticates the connection only: OpenWOP's openwop-auth-mtls profile (spec/v1/auth-profiles.md at
 * openwop/openwop 333ad66e: "a transport principal, not a replacement for operation scopes"). A mapped
 * certificate then binds its tenant: a header credential of another tenant is refused.
 */
export function hostAuthenticator(
  settings: AuthSettings,
  clientPrincipals: readonly ClientCertificateEntry[] = [],
  observers: { oidc?: OidcObserver; certificates?: CertificateObserver } = {},
): Authenticator {
  if (settings.mode === "off" && clientPrincipals.length === 0) return devAuthenticator;
  const parts: Authenticator[] = [];
  const certificates = new ClientCertificateAuthenticator(clientPrincipals);
  if (clientPrincipals.length > 0)
    parts.push(
      clientCertificatePort(
        certificates,
        clientPrincipals,
        observers.certificates,
        // With no header credential configured, a header a caller sends anyway is not one: the certificate decides.
        settings.oidc !== undefined || settings.keys.length > 0,
      ),
    );
  if (settings.oidc) parts.push(oidcAuthenticator(settings.oidc, observers.oidc ? { observer: observers.oidc } : {}));
  if (settings.keys.length > 0) parts.push(apiKeyAuthenticator(settings.keys));
  const all = chain(...parts);
  return clientPrincipals.length > 0 ? sameTenantAsCertificate(all, certificates) : all;
}

/** A header credential presented over a mapped certificate's connection must be of the certificate's tenant. */
function sameTenantAsCertificate(inner: Authenticator, certificates: ClientCertificateAuthenticator): Authenticator {
  const check = (principal: Principal, tenant: string): Principal => {
    if (principal.tenant === tenant) return principal;
    throw new DomainError(
      "unauthenticated",
      "the client certificate and the bearer credential belong to different tenants: present credentials of one",
    );
  };
  return {
    recognises: (request) => inner.recognises(request),
    authenticate(request) {
      const answer = inner.authenticate(request);
      const bound = otherCredential(request.headers) ? certificates.authenticate(request) : undefined;
      // Only when a header credential decided: a certificate that decided itself is its own tenant.
      if (!bound) return answer;
      return answer instanceof Promise ? answer.then((p) => check(p, bound.tenant)) : check(answer, bound.tenant);
    },
    describe: () => inner.describe(),
  };
}

/**
 * Client certificates on the port: recognised when the connection's verified certificate is the request's only
 * credential (or the host takes no header credential). An unmapped one grants nothing; its caller learns that, the
 * operator (who can map it) learns which certificate it was.
 */
function clientCertificatePort(
  certificates: ClientCertificateAuthenticator,
  entries: readonly ClientCertificateEntry[],
  observer: CertificateObserver | undefined,
  headerCredentials: boolean,
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
    // Alone only: beside a header credential, that credential decides (and sameTenantAsCertificate binds the two).
    recognises: (request) =>
      request.peerCertificate !== undefined && (!headerCredentials || !otherCredential(request.headers)),
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

/** Credentials in headers (a bearer token or API key): with one, the certificate leaves the decision to it. */
function otherCredential(headers: HeaderLookup): boolean {
  return headers("authorization") !== undefined || headers("x-api-key") !== undefined;
}
