import { createHash } from "node:crypto";
import { oidcEgressClient, type OidcObserver } from "../auth/oidc-authenticator.js";
import { discoveredEndpoint, readDiscovery } from "../auth/oidc-discovery.js";
import type { ConsoleSsoSettings } from "./console-sso-settings.js";

/** The endpoints of the console's identity provider, from its discovery document. */
interface IdpEndpoints {
  authorization: URL;
  token: URL;
  endSession?: URL;
}

/** What the token endpoint gave for a code. */
export interface CodeExchange {
  accessToken: string;
}

/** A refusal by the identity provider or a failure to reach it: its words for the operator, never a token. */
export class SignInError extends Error {
  override readonly name = "SignInError";
}

const TIMEOUT_MS = 5_000;
/** A failed discovery is retried after this long (as the authenticator does). */
const DISCOVERY_RETRY_MS = 5_000;

/**
 * The console's client at the identity provider (OAuth 2.0 authorization code with PKCE S256, RFC 7636): the
 * authorization URL a browser is sent to, and the code exchanged for an access token at the token endpoint. The
 * endpoints come from the issuer's discovery document, fetched through the same egress client and policy as
 * the authenticator's (the issuer's host, its CA bundle).
 */
export class ConsoleIdp {
  private readonly http;
  private endpoints: Promise<IdpEndpoints> | undefined;
  private failedAt = 0;

  constructor(
    private readonly settings: ConsoleSsoSettings,
    options: { observer?: OidcObserver } = {},
  ) {
    this.http = oidcEgressClient(settings.issuer, options);
  }

  /** The issuer, for the page's "Sign in with …" button. */
  get issuer(): string {
    return this.settings.issuer.issuer;
  }

  /** Where to send the browser to sign in: `state` binds the answer to this sign-in, the challenge to its verifier. */
  async authorizationUrl(state: string, codeVerifier: string): Promise<string> {
    const url = new URL((await this.discover()).authorization);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("client_id", this.settings.clientId);
    url.searchParams.set("redirect_uri", this.settings.redirectUri);
    url.searchParams.set("scope", this.settings.scopes);
    url.searchParams.set("state", state);
    url.searchParams.set("code_challenge", createHash("sha256").update(codeVerifier).digest("base64url"));
    url.searchParams.set("code_challenge_method", "S256");
    return url.href;
  }

  /** The code the IdP redirected back with, exchanged for an access token (the verifier proves it is ours). */
  async exchange(code: string, codeVerifier: string): Promise<CodeExchange> {
    const { token } = await this.discover();
    const form = new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: this.settings.redirectUri,
      client_id: this.settings.clientId,
      code_verifier: codeVerifier,
    });
    const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
    if (this.settings.clientSecret) {
      // RFC 6749 §2.3.1 client_secret_basic: the id and secret form-encoded, then base64.
      const basic = `${encodeURIComponent(this.settings.clientId)}:${encodeURIComponent(this.settings.clientSecret.reveal())}`;
      headers["authorization"] = `Basic ${Buffer.from(basic).toString("base64")}`;
    }
    let response;
    try {
      response = await this.http.request({
        method: "POST",
        url: token.href,
        body: form.toString(),
        headers,
        timeoutMs: TIMEOUT_MS,
        returnErrorStatus: true,
      });
    } catch (err) {
      throw new SignInError(`the identity provider's token endpoint could not be reached (${(err as Error).message})`);
    }
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(response.body) as Record<string, unknown>;
    } catch {
      body = {};
    }
    if (response.status !== 200) {
      // RFC 6749 §5.2: `error` is a code from a fixed set; the description is the IdP's text, shortened, never echoed raw.
      const error =
        typeof body["error"] === "string"
          ? body["error"].replace(/[^\w.-]/g, "").slice(0, 60)
          : `HTTP ${response.status}`;
      throw new SignInError(`the identity provider refused the code (${error})`);
    }
    const accessToken = body["access_token"];
    if (typeof accessToken !== "string" || !accessToken)
      throw new SignInError("the identity provider's token response has no access_token");
    return { accessToken };
  }

  /** Where to end the IdP's own session after ours (RP-initiated logout), when it has an end_session_endpoint. */
  async endSessionUrl(postLogoutRedirectUri: string): Promise<string | undefined> {
    const endpoints = await this.discover().catch(() => undefined);
    if (!endpoints?.endSession) return undefined;
    const url = new URL(endpoints.endSession);
    url.searchParams.set("client_id", this.settings.clientId);
    url.searchParams.set("post_logout_redirect_uri", postLogoutRedirectUri);
    return url.href;
  }

  private discover(): Promise<IdpEndpoints> {
    if (!this.endpoints && Date.now() - this.failedAt < DISCOVERY_RETRY_MS)
      return Promise.reject(
        new SignInError("the identity provider's discovery document is unavailable; try again in a few seconds"),
      );
    this.endpoints ??= readDiscovery(this.http, this.settings.issuer, TIMEOUT_MS)
      .then((document) => {
        const authorization = discoveredEndpoint(document, "authorization_endpoint", this.settings.issuer);
        const token = discoveredEndpoint(document, "token_endpoint", this.settings.issuer);
        if (!authorization || !token)
          throw new Error("the discovery document has no authorization_endpoint or token_endpoint");
        const endSession = discoveredEndpoint(document, "end_session_endpoint", this.settings.issuer);
        return { authorization, token, ...(endSession ? { endSession } : {}) };
      })
      .catch((err: unknown) => {
        this.failedAt = Date.now();
        this.endpoints = undefined;
        throw err instanceof SignInError
          ? err
          : new SignInError(`the identity provider's discovery failed (${(err as Error).message})`);
      });
    return this.endpoints;
  }
}
