import type { Logger } from "../observability/logger.js";
import type { Telemetry } from "../observability/telemetry.js";
import { tlsFailureReporter } from "../egress/tls-failure-report.js";

/** Where a TLS failure toward an identity provider points the operator. */
const OIDC_CA_HINT =
  "If the identity provider's certificate comes from a private CA, trust that CA with the issuer's caFile in AUTH_OIDC_ISSUERS or AUTH_OIDC_CA_FILE (or NODE_EXTRA_CA_CERTS for the whole process).";

/**
 * The OIDC authenticator's reports (auth/oidc-authenticator.ts OidcObserver): a token refused for its lifetime is
 * logged with the exact rule it broke (the caller is told only that its lifetime is refused); a TLS failure toward
 * an issuer's discovery or JWKS is counted and logged once with its cause.
 */
export function oidcObserver(
  logger: Logger,
  telemetry: Telemetry,
): { refused(issuer: string, reason: string): void; tlsFailure(where: string, code: string): void } {
  return {
    refused: (issuer, reason) => logger.info({ issuer }, `token refused: ${reason}`),
    tlsFailure: tlsFailureReporter({
      logger,
      counter: telemetry.metrics.egressTlsFailures,
      subject: "OIDC issuer",
      hint: OIDC_CA_HINT,
    }),
  };
}

const PEER_CA_HINT =
  "If the peer's certificate comes from a private CA, trust that CA with A2A_PEERS_CA_FILE or the peer's credentials.mtls.caFile (or NODE_EXTRA_CA_CERTS for the whole process).";

/** TLS failures toward peers (cards, calls, JWKS, both wires): counted, and logged once per server and cause. */
export function peerTlsFailureReporter(logger: Logger, telemetry: Telemetry): (where: string, code: string) => void {
  return tlsFailureReporter({
    logger,
    counter: telemetry.metrics.egressTlsFailures,
    subject: "peer",
    hint: PEER_CA_HINT,
  });
}

/**
 * The client-certificate port's reports (auth/host-authenticator.ts CertificateObserver): a verified certificate
 * that no TLS_CLIENT_PRINCIPALS entry maps is logged with its names and the entry that would let it in; its
 * caller is told only that it is not mapped.
 */
export function certificateObserver(logger: Logger): { unmapped(subject: string, subjectAltNames: string[]): void } {
  return {
    unmapped(subject, subjectAltNames) {
      const entry = JSON.stringify({ subject, tenant: "<tenant>", scopes: ["<scope>"] });
      const orSan = subjectAltNames.length > 0 ? ` (or {"san": …} with one of ${subjectAltNames.join(", ")})` : "";
      logger.warn(
        { event: "auth.unmapped_certificate", subject, subjectAltNames },
        `refused a verified client certificate that is not mapped to a principal: to let it in, add ${entry}${orSan} to TLS_CLIENT_PRINCIPALS`,
      );
    },
  };
}
