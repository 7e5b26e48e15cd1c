import type { PeerCertificate } from "node:tls";
import { SCOPES, type Principal, type Scope } from "./principal.js";

/** One `TLS_CLIENT_PRINCIPALS` entry: a client certificate (by subject or by one subject alternative name) → a principal. */
export interface ClientCertificateEntry {
  /** The full subject as `KEY=value` pairs joined by commas (`CN=billing-agent,O=Acme`); order does not matter, every pair must match and no other may be present. */
  subject?: string;
  /** One subject alternative name as Node writes it: `DNS:agent.example.com`, `URI:spiffe://acme/agent`, `email:a@b.c`, `IP Address:10.0.0.7`. */
  san?: string;
  tenant: string;
  scopes: Scope[];
}

/** What the transport hands over: the request's headers and, only when the TLS layer verified it against TLS_CLIENT_CA_FILE, the client certificate. */
export interface CertificateCredentials {
  headers: (name: string) => string | undefined;
  peerCertificate?: PeerCertificate | undefined;
}

/**
 * Mutual TLS callers: a verified client certificate named in `TLS_CLIENT_PRINCIPALS` is that entry's principal.
 * Answers `undefined` when there is no verified certificate or the certificate is unmapped (an unmapped
 * certificate grants nothing: the caller needs other credentials, which the next authenticator checks).
 * The caller must pass only certificates the handshake verified (`socket.authorized === true`).
 */
export class ClientCertificateAuthenticator {
  constructor(private readonly entries: readonly ClientCertificateEntry[]) {}

  authenticate({ peerCertificate }: CertificateCredentials): Principal | undefined {
    if (!peerCertificate || !peerCertificate.raw) return undefined;
    const subject = subjectPairs(peerCertificate.subject);
    const sans = new Set(subjectAltNames(peerCertificate.subjectaltname));
    for (const entry of this.entries) {
      const matched =
        entry.subject !== undefined
          ? sameSubject(subject, parseSubject(entry.subject))
          : entry.san !== undefined && sans.has(entry.san);
      if (matched) return { tenant: entry.tenant, id: `mtls:${entry.subject ?? entry.san}`, scopes: entry.scopes };
    }
    return undefined;
  }
}

/** A certificate as an operator maps it in `TLS_CLIENT_PRINCIPALS`: its subject (`CN=agent,O=Acme`, in the certificate's order) and subject alternative names. */
export function certificateNames(certificate: PeerCertificate): { subject: string; subjectAltNames: string[] } {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(certificate.subject ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) pairs.push(`${key}=${String(v)}`);
  }
  return { subject: pairs.join(","), subjectAltNames: subjectAltNames(certificate.subjectaltname) };
}

/** The subject's attributes as sorted `KEY=value` strings (a repeated attribute, e.g. two OUs, gives one pair per value). */
function subjectPairs(subject: PeerCertificate["subject"] | undefined): string[] {
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(subject ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) pairs.push(`${key}=${String(v)}`);
  }
  return pairs.sort();
}

function parseSubject(raw: string): string[] {
  return raw
    .split(",")
    .map((pair) => pair.trim().replace(/\s*=\s*/, "="))
    .filter(Boolean)
    .sort();
}

function sameSubject(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((pair, i) => pair === b[i]);
}

/** Node's `subjectaltname` is `DNS:a, URI:b, IP Address:c`; a value holding ", " is quoted (JSON-style). */
function subjectAltNames(raw: string | undefined): string[] {
  if (!raw) return [];
  const names: string[] = [];
  for (const match of raw.matchAll(/([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g)) {
    const value = match[2]!.startsWith('"') ? (JSON.parse(match[2]!) as string) : match[2]!;
    names.push(`${match[1]}:${value}`);
  }
  return names;
}

/**
 * Parses `TLS_CLIENT_PRINCIPALS`: a JSON array of `{subject | san, tenant, scopes}`. Throws a message that
 * says which entry is wrong.
 */
export function parseClientPrincipals(raw: string): ClientCertificateEntry[] {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new Error(`TLS_CLIENT_PRINCIPALS must be a JSON array of {"subject" | "san", "tenant", "scopes"}`);
  }
  if (!Array.isArray(value) || value.length === 0)
    throw new Error("TLS_CLIENT_PRINCIPALS must be a non-empty JSON array");
  return value.map((entry: unknown, i) => {
    const e = (entry ?? {}) as Record<string, unknown>;
    const where = `TLS_CLIENT_PRINCIPALS[${i}]`;
    const subject = e["subject"];
    const san = e["san"];
    if ((subject === undefined) === (san === undefined))
      throw new Error(`${where} needs exactly one of "subject" or "san"`);
    if (
      subject !== undefined &&
      (typeof subject !== "string" || !/^[^=,]+=[^,]*(,[^=,]+=[^,]*)*$/.test(subject.trim()))
    ) {
      throw new Error(`${where}.subject must be KEY=value pairs joined by commas (e.g. "CN=billing-agent,O=Acme")`);
    }
    if (san !== undefined && (typeof san !== "string" || !/^(DNS|URI|email|IP Address):.+$/.test(san))) {
      throw new Error(`${where}.san must be "DNS:…", "URI:…", "email:…" or "IP Address:…"`);
    }
    if (typeof e["tenant"] !== "string" || !e["tenant"] || e["tenant"] === "*")
      throw new Error(`${where}.tenant must be a non-empty string (not "*")`);
    const scopes = e["scopes"];
    if (!Array.isArray(scopes) || scopes.some((s) => !(SCOPES as readonly unknown[]).includes(s))) {
      throw new Error(`${where}.scopes must be an array of ${SCOPES.join(", ")}`);
    }
    return {
      ...(subject !== undefined ? { subject: subject as string } : { san: san as string }),
      tenant: e["tenant"],
      scopes: scopes as Scope[],
    };
  });
}
