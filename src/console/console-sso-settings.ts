import type { EnvReader } from "../domain/env-settings.js";
import type { OidcIssuerSettings, OidcSettings } from "../auth/oidc-settings.js";
import { SecretValue } from "../secrets/secret-value.js";

/** The console's sign-in through the identity provider (OIDC authorization code flow with PKCE). */
export interface ConsoleSsoSettings {
  /** One of the issuers whose access tokens the host takes: the session's token is checked exactly as an API caller's. */
  issuer: OidcIssuerSettings;
  /** CONSOLE_OIDC_CLIENT_ID: the console's client at the identity provider (a public client). */
  clientId: string;
  /** CONSOLE_OIDC_CLIENT_SECRET: only when the identity provider insists on a confidential client. */
  clientSecret?: SecretValue<string>;
  /** CONSOLE_OIDC_SCOPES: what the authorization request asks for (default "openid"). */
  scopes: string;
  /** The redirect URI registered at the identity provider: PUBLIC_URL + /console/auth/callback. */
  redirectUri: string;
}

export const CONSOLE_CALLBACK_PATH = "/console/auth/callback";

/**
 * CONSOLE_OIDC_CLIENT_ID turns the sign-in on; CONSOLE_OIDC_ISSUER names which of the configured issuers (needed
 * when there are several). Undefined when off. Problems go to the reader; the client secret never appears in one.
 */
export function readConsoleSsoSettings(
  env: EnvReader,
  oidc: OidcSettings | undefined,
  publicUrl: string,
): ConsoleSsoSettings | undefined {
  const clientId = env.raw("CONSOLE_OIDC_CLIENT_ID")?.trim() || undefined;
  const named = env.raw("CONSOLE_OIDC_ISSUER")?.trim() || undefined;
  const secret = env.raw("CONSOLE_OIDC_CLIENT_SECRET") || undefined;
  if (clientId === undefined) {
    if (named !== undefined || secret !== undefined)
      env.problem(
        `${named !== undefined ? "CONSOLE_OIDC_ISSUER" : "CONSOLE_OIDC_CLIENT_SECRET"} needs CONSOLE_OIDC_CLIENT_ID (the console's client at the identity provider)`,
      );
    return undefined;
  }
  const issuers = oidc?.issuers ?? [];
  let issuer: OidcIssuerSettings | undefined;
  if (issuers.length === 0)
    env.problem(
      "CONSOLE_OIDC_CLIENT_ID needs an OIDC issuer (AUTH_OIDC_ISSUER or AUTH_OIDC_ISSUERS): the console's token is checked like every access token",
    );
  else if (named !== undefined) {
    issuer = issuers.find((i) => i.issuer === named);
    if (!issuer)
      env.problem(
        `CONSOLE_OIDC_ISSUER "${named}" is not a configured issuer (configured: ${issuers.map((i) => i.issuer).join(", ")})`,
      );
  } else if (issuers.length > 1)
    env.problem(
      `CONSOLE_OIDC_ISSUER must name the console's issuer: several are configured (${issuers.map((i) => i.issuer).join(", ")})`,
    );
  else issuer = issuers[0];
  const scopes = env.raw("CONSOLE_OIDC_SCOPES")?.trim() || "openid";
  if (!issuer) return undefined;
  return {
    issuer,
    clientId,
    ...(secret !== undefined ? { clientSecret: new SecretValue(secret) } : {}),
    scopes,
    redirectUri: `${publicUrl.replace(/\/$/, "")}${CONSOLE_CALLBACK_PATH}`,
  };
}
