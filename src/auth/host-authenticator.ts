import { apiKeyAuthenticator } from "./api-key-authenticator.js";
import { chain, type Authenticator } from "./authenticator.js";
import type { AuthSettings } from "./auth-settings.js";
import { devAuthenticator } from "./dev-authenticator.js";
import { oidcAuthenticator } from "./oidc-authenticator.js";

/**
 * The host's way in from its settings: dev (AUTH=off), or the configured authenticators side by side. Tokens
 * come first: a JWT-shaped bearer goes to OIDC, anything else to API keys.
 */
export function hostAuthenticator(settings: AuthSettings): Authenticator {
  if (settings.mode === "off") return devAuthenticator;
  const parts: Authenticator[] = [];
  if (settings.oidc) parts.push(oidcAuthenticator(settings.oidc));
  if (settings.keys.length > 0) parts.push(apiKeyAuthenticator(settings.keys));
  return chain(...parts);
}
