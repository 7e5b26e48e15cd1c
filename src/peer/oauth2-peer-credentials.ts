/**
 * OAuth2 client credentials (RFC 6749 §4.4) for a named peer: the token endpoint is asked for an access token,
 * which goes out as `Authorization: Bearer …`. The token is kept until 60 s before its `expires_in` (one without
 * `expires_in` is kept until the peer refuses it); a 401 from the peer drops it and the call is made once more
 * with a fresh one. One fetch at a time per peer: concurrent calls wait for the same answer.
 *
 * The token endpoint is operator-configured but still an outbound call, so it goes through the same guarded
 * peer HTTP client as the peer calls (egress guard, pinned connections, no redirects, capped body). The client
 * authenticates with HTTP Basic (client_secret_basic, RFC 6749 §2.3.1). Its secret and the token stay
 * SecretValues; a failure names the peer, the endpoint's origin and the OAuth2 error code, never a secret, and
 * is retryable (an endpoint that is down, or refuses a client that is then fixed, may answer later).
 */
import type { PeerCredentialSettings } from "./peer-config.js";
import type { PeerCredentials } from "./peer-credentials.js";
import { PeerCallError, type PeerHttpClient } from "./peer-http-client.js";
import { SecretValue } from "../secrets/secret-value.js";

export type OAuth2Settings = Extract<PeerCredentialSettings, { kind: "oauth2" }>;

/** A token is given up this long before the endpoint said it expires, so no call carries one that just expired. */
export const TOKEN_EXPIRY_MARGIN_MS = 60_000;

interface Token {
  value: SecretValue<string>;
  /** Epoch ms after which it is fetched again; Infinity when the endpoint gave no `expires_in`. */
  renewAt: number;
}

/** RFC 6749 §2.3.1: client id and secret are form-encoded before they are joined for Basic. */
const formEncoded = (value: string) => encodeURIComponent(value).replace(/%20/g, "+");

/** An OAuth2 `error` code (RFC 6749 §5.2) is a short printable token; anything else is not quoted. */
const ERROR_CODE = /^[\x21\x23-\x5b\x5d-\x7e]{1,64}$/;

export function createOAuth2PeerCredentials(opts: {
  peer: string;
  settings: OAuth2Settings;
  http: PeerHttpClient;
  timeoutMs: number;
  now?: () => number;
}): PeerCredentials {
  const { peer, settings, http } = opts;
  const now = opts.now ?? Date.now;
  const origin = new URL(settings.tokenUrl).origin;
  let token: Token | undefined;
  let pending: Promise<Token> | undefined;
  /** The token the peer last refused: still a secret, so still redacted from what the retried call reports. */
  let refused: Token | undefined;

  const failed = (why: string, retryable = true) =>
    new PeerCallError(`the OAuth2 token endpoint for peer "${peer}" (${origin}) ${why}`, "credentials", retryable);

  async function fetchToken(): Promise<Token> {
    const form = new URLSearchParams({ grant_type: "client_credentials" });
    if (settings.scopes && settings.scopes.length > 0) form.set("scope", settings.scopes.join(" "));
    if (settings.audience !== undefined) form.set("audience", settings.audience);
    const basic = Buffer.from(
      `${formEncoded(settings.clientId)}:${formEncoded(settings.clientSecret.reveal())}`,
    ).toString("base64");
    const asked = now();
    let response;
    try {
      response = await http.request({
        method: "POST",
        url: settings.tokenUrl,
        body: form.toString(),
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
          authorization: `Basic ${basic}`,
        },
        timeoutMs: opts.timeoutMs,
        returnErrorStatus: true,
      });
    } catch (err) {
      // An egress refusal is configuration and will not change; unreachable, timed out and the like may.
      const cause = err instanceof PeerCallError ? err : undefined;
      throw failed(
        `could not be asked for a token: ${cause?.message ?? "unexpected error"}`,
        cause ? cause.kind !== "egress" : true,
      );
    }
    let body: Record<string, unknown> = {};
    try {
      const parsed = JSON.parse(response.body) as unknown;
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
        body = parsed as Record<string, unknown>;
    } catch {
      // not JSON: reported below without quoting it (a careless endpoint might echo the request).
    }
    if (response.status !== 200) {
      const code = typeof body["error"] === "string" && ERROR_CODE.test(body["error"]) ? `: ${body["error"]}` : "";
      const refused = response.status === 400 || response.status === 401 ? " (refused the client)" : "";
      throw failed(`answered HTTP ${response.status}${refused}${code}`);
    }
    const accessToken = body["access_token"];
    const tokenType = body["token_type"];
    const expiresIn = body["expires_in"];
    if (typeof accessToken !== "string" || accessToken.length === 0 || /[\r\n]/.test(accessToken))
      throw failed("answered without a usable access_token");
    if (typeof tokenType !== "string" || tokenType.toLowerCase() !== "bearer")
      throw failed('answered a token_type other than "Bearer"');
    const seconds =
      typeof expiresIn === "number"
        ? expiresIn
        : typeof expiresIn === "string" && /^\d+$/.test(expiresIn)
          ? Number(expiresIn)
          : undefined;
    return {
      value: new SecretValue(accessToken),
      renewAt: seconds === undefined ? Infinity : asked + seconds * 1000 - TOKEN_EXPIRY_MARGIN_MS,
    };
  }

  async function current(): Promise<Token> {
    if (token && now() < token.renewAt) return token;
    if (!pending) {
      pending = fetchToken().then(
        (fresh) => {
          token = fresh;
          pending = undefined;
          return fresh;
        },
        (err: unknown) => {
          pending = undefined;
          throw err;
        },
      );
    }
    return pending;
  }

  return {
    async headersFor() {
      return { authorization: `Bearer ${(await current()).value.reveal()}` };
    },
    onUnauthorized() {
      if (token) refused = token;
      token = undefined;
      return true;
    },
    secrets: () => [settings.clientSecret.reveal(), ...[token, refused].flatMap((t) => (t ? [t.value.reveal()] : []))],
  };
}
