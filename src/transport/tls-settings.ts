import { parseClientPrincipals, type ClientCertificateEntry } from "../auth/client-certificate-authenticator.js";
import type { EnvReader } from "../domain/env-settings.js";

/** Whether the port asks for client certificates: not at all, optionally (callers without one use other credentials), or always. */
export type ClientAuthMode = "none" | "optional" | "required";

/** TLS on the one port (docs/security.md "TLS and mutual TLS"); absent = cleartext (h2c + HTTP/1.1). */
export interface TlsSettings {
  certFile: string;
  keyFile: string;
  /** The CA bundle client certificates must chain to (needed unless TLS_CLIENT_AUTH=none). */
  clientCaFile: string | undefined;
  clientAuth: ClientAuthMode;
  /** Verified client certificates → principals (TLS_CLIENT_PRINCIPALS); empty = a certificate grants nothing. */
  clientPrincipals: ClientCertificateEntry[];
  /** How often the certificate, key and CA files are checked for changes (rotation without a restart). */
  reloadIntervalMs: number;
}

/** TLS_CERT_FILE, TLS_KEY_FILE, TLS_CLIENT_CA_FILE, TLS_CLIENT_AUTH, TLS_CLIENT_PRINCIPALS, TLS_RELOAD_INTERVAL_MS. */
export function readTlsSettings(env: EnvReader): TlsSettings | undefined {
  const certFile = env.raw("TLS_CERT_FILE");
  const keyFile = env.raw("TLS_KEY_FILE");
  const clientCaFile = env.raw("TLS_CLIENT_CA_FILE");
  const clientAuth = env.oneOf(
    "TLS_CLIENT_AUTH",
    ["none", "optional", "required"] as const,
    clientCaFile ? "optional" : "none",
  );
  const principalsRaw = env.raw("TLS_CLIENT_PRINCIPALS");
  const reloadIntervalMs = env.int("TLS_RELOAD_INTERVAL_MS", 60_000, 100, 86_400_000);
  if (!certFile && !keyFile) {
    if (clientCaFile || principalsRaw || env.raw("TLS_CLIENT_AUTH"))
      env.problem("TLS_CLIENT_CA_FILE, TLS_CLIENT_AUTH and TLS_CLIENT_PRINCIPALS need TLS_CERT_FILE and TLS_KEY_FILE");
    return undefined;
  }
  if (!certFile || !keyFile) {
    env.problem("TLS_CERT_FILE and TLS_KEY_FILE go together (the server certificate chain and its private key, PEM)");
    return undefined;
  }
  if (clientAuth !== "none" && !clientCaFile)
    env.problem(
      `TLS_CLIENT_AUTH=${clientAuth} needs TLS_CLIENT_CA_FILE (the CA bundle client certificates must chain to)`,
    );
  let clientPrincipals: ClientCertificateEntry[] = [];
  if (principalsRaw) {
    if (clientAuth === "none")
      env.problem("TLS_CLIENT_PRINCIPALS needs TLS_CLIENT_AUTH=optional or required (and TLS_CLIENT_CA_FILE)");
    try {
      clientPrincipals = parseClientPrincipals(principalsRaw);
    } catch (err) {
      env.problem((err as Error).message);
    }
  }
  return { certFile, keyFile, clientCaFile, clientAuth, clientPrincipals, reloadIntervalMs };
}
