import { readFileSync } from "node:fs";

/**
 * The PEM text of a CA bundle file (AUTH_OIDC_CA_FILE, an issuer's caFile, A2A_PEERS_CA_FILE), for outbound TLS to
 * servers whose certificates come from a private CA; a problem naming the setting and the path (never the
 * content) when it cannot be used.
 */
export function readCaBundle(path: string, where: string, problem: (message: string) => void): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    problem(`${where} ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? "unreadable"})`);
    return undefined;
  }
  if (!/-----BEGIN CERTIFICATE-----/.test(text)) {
    problem(`${where} ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
    return undefined;
  }
  return text;
}
