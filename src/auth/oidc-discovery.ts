import type { EgressHttpClient } from "../egress/egress-http-client.js";
import type { OidcIssuerSettings } from "./oidc-settings.js";

/** An issuer's OpenID discovery document (OpenID Connect Discovery 1.0 §3), the fields the host reads. */
export interface OidcDiscoveryDocument {
  issuer: string;
  jwks_uri?: unknown;
  authorization_endpoint?: unknown;
  token_endpoint?: unknown;
  end_session_endpoint?: unknown;
  code_challenge_methods_supported?: unknown;
}

export function discoveryUrlOf(issuer: string): string {
  return `${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
}

/**
 * Fetches `settings.issuer`'s discovery document through `http` (an egress client under the issuer's policy). It
 * must name exactly the configured issuer (§4.3): a document that names another is refused.
 */
export async function readDiscovery(
  http: EgressHttpClient,
  settings: Pick<OidcIssuerSettings, "issuer">,
  timeoutMs: number,
): Promise<OidcDiscoveryDocument> {
  const response = await http.request({
    method: "GET",
    url: discoveryUrlOf(settings.issuer),
    timeoutMs,
    returnErrorStatus: true,
  });
  if (response.status !== 200) throw new Error(`OIDC discovery answered ${response.status}`);
  const document = JSON.parse(response.body) as Partial<OidcDiscoveryDocument> | null;
  if (document?.issuer !== settings.issuer) throw new Error("OIDC discovery names another issuer");
  return document as OidcDiscoveryDocument;
}

/** One endpoint of the document as a URL: https://, or http:// only under the test switch; undefined when absent. */
export function discoveredEndpoint(
  document: OidcDiscoveryDocument,
  field: "jwks_uri" | "authorization_endpoint" | "token_endpoint" | "end_session_endpoint",
  settings: Pick<OidcIssuerSettings, "allowInsecure">,
): URL | undefined {
  const raw = document[field];
  if (raw === undefined) return undefined;
  if (typeof raw !== "string") throw new Error(`OIDC discovery's ${field} is not a URL`);
  const url = new URL(raw);
  if (url.protocol !== "https:" && !(settings.allowInsecure && url.protocol === "http:"))
    throw new Error(`${field} must be https://`);
  return url;
}
