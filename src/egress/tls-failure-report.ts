import type { Counter } from "@opentelemetry/api";
import type { Logger } from "../observability/logger.js";
import { everyLabelSet, startAtZero } from "../observability/metrics.js";

/** What a TLS failure toward a server comes down to, for an operator. */
export type TlsFailureCause = "unknown-ca" | "expired" | "not-yet-valid" | "name-mismatch" | "other";

/** Every cause, so the failures counter can start each of a subject's series at 0. */
export const TLS_FAILURE_CAUSES = Object.keys({
  "unknown-ca": true,
  expired: true,
  "not-yet-valid": true,
  "name-mismatch": true,
  other: true,
} satisfies Record<TlsFailureCause, true>) as TlsFailureCause[];

const CAUSES: ReadonlyArray<{ cause: TlsFailureCause; codes: RegExp; says: string }> = [
  {
    cause: "unknown-ca",
    codes:
      /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_UNTRUSTED|CERT_SIGNATURE_FAILURE)$/,
    says: "unable to verify its certificate: it is not signed by a CA this host trusts",
  },
  { cause: "expired", codes: /^CERT_HAS_EXPIRED$/, says: "its certificate has expired" },
  { cause: "not-yet-valid", codes: /^CERT_NOT_YET_VALID$/, says: "its certificate is not valid yet" },
  { cause: "name-mismatch", codes: /^ERR_TLS_CERT_ALTNAME_INVALID$/, says: "its certificate is for another name" },
];

/** Node's and OpenSSL's codes for a failed TLS handshake or certificate check. */
export function isTlsFailureCode(code: string | undefined): code is string {
  return code !== undefined && /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(code);
}

export function tlsFailureCause(code: string): { cause: TlsFailureCause; says: string } {
  const known = CAUSES.find((c) => c.codes.test(code));
  return known ? { cause: known.cause, says: known.says } : { cause: "other", says: "the TLS handshake failed" };
}

/**
 * Reports TLS failures of one kind of outbound call (OIDC issuers, peers): each is counted
 * (`openwop_egress_tls_failures_total{subject, cause}`), and logged once per server and cause with what to do
 * (`hint`), so a CA that is not trusted is named in the log instead of hiding behind "keys unavailable", without
 * a line per request.
 */
export function tlsFailureReporter(options: {
  logger: Logger;
  counter: Counter;
  subject: string;
  hint: string;
}): (where: string, code: string) => void {
  startAtZero(options.counter, everyLabelSet({ subject: [options.subject], cause: TLS_FAILURE_CAUSES }));
  const logged = new Set<string>();
  return (where, code) => {
    const { cause, says } = tlsFailureCause(code);
    options.counter.add(1, { subject: options.subject, cause });
    const key = `${where} ${code}`;
    if (logged.has(key) || logged.size >= 1_000) return;
    logged.add(key);
    const unknownCa = cause === "unknown-ca" ? ` ${options.hint}` : "";
    options.logger.warn(
      { subject: options.subject, where, code, cause },
      `TLS to ${options.subject} ${where} failed: ${says} (${code}).${unknownCa}`,
    );
  };
}
