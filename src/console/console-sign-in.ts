import { decodeJwt } from "jose";
import type { Authenticator } from "../auth/authenticator.js";
import { requireScope } from "../auth/principal.js";
import { DomainError } from "../domain/errors.js";
import { sendOpenwopError } from "../transport/errors/openwop-error-exit.js";
import { sendJson, type HttpRequest, type HttpResponse } from "../transport/http-io.js";
import type { HttpRouter } from "../transport/http-router.js";
import { queryOf } from "../transport/rest/openwop-request.js";
import { CONSOLE_SCOPE } from "./console-access.js";
import { SignInError, type ConsoleIdp } from "./console-idp.js";
import { csrfMatches, type ConsoleSessions } from "./console-sessions.js";
import { CONSOLE_CALLBACK_PATH } from "./console-sso-settings.js";

/** The session cookie: an opaque id (console-sessions.ts), sent only to /console. */
export const SESSION_COOKIE = "console_session";
/** Binds a sign-in's `state` to the browser that started it (a login-CSRF guard), for the callback only. */
export const SIGN_IN_COOKIE = "console_sign_in";
/** The header the page sends its session's CSRF token in, on every call. */
export const CSRF_HEADER = "x-csrf-token";
/** The sign-in routes: public (no credential), they make or end the session. */
export const CONSOLE_AUTH_PATH = /^\/console\/auth\/(login|callback|logout|session)$/;

export interface ConsoleSignInOptions {
  /** Undefined when the console signs in with API keys only: /console/auth/session says so. */
  idp?: ConsoleIdp;
  sessions: ConsoleSessions;
  /** The host's authenticator: a session's token is checked as every API caller's, at sign-in and on each call. */
  authenticator: Authenticator;
  /** PUBLIC_URL: the origin state-changing calls must come from, and where logout returns to. */
  publicUrl: string;
  /** Cookies only over TLS (TLS on the port, or an https:// PUBLIC_URL behind a proxy). */
  secureCookies: boolean;
}

const NO_STORE = { "cache-control": "no-store" };

/**
 * GET /console/auth/login sends the browser to the IdP (authorization code + PKCE S256); GET /console/auth/callback
 * takes the code back, exchanges it, checks the token with the host's authenticator and sets the session cookie;
 * POST /console/auth/logout ends it; GET /console/auth/session tells the page whether it is signed in, its CSRF
 * token, and whether IdP sign-in is offered.
 */
export function addConsoleSignInRoutes(router: HttpRouter, options: ConsoleSignInOptions): void {
  const { idp, sessions } = options;
  const cookie = cookieWriter(options.secureCookies);

  router.add("GET", "/console/auth/session", async (req, res) => {
    const id = cookieOf(req, SESSION_COOKIE);
    const session = id ? sessions.get(id) : undefined;
    const signIn = idp ? { issuer: idp.issuer, loginUrl: "/console/auth/login" } : null;
    const body = session
      ? {
          signIn,
          signedIn: true,
          tenant: session.tenant,
          expiresAt: new Date(session.expiresAt).toISOString(),
          csrfToken: session.csrfToken.reveal(),
        }
      : { signIn, signedIn: false };
    sendJson(res, 200, body, {
      ...NO_STORE,
      ...(id && !session ? { "set-cookie": cookie(SESSION_COOKIE, "", { maxAge: 0, sameSite: "Strict" }) } : {}),
    });
  });

  router.add("POST", "/console/auth/logout", async (req, res) => {
    const id = cookieOf(req, SESSION_COOKIE);
    const session = id ? sessions.get(id) : undefined;
    // Signing someone out is a state change too: the same origin and CSRF checks as the console's API.
    if (session) crossSiteProblem(req, session, options.publicUrl, true);
    if (id) sessions.end(id);
    const endSessionUrl =
      session && idp ? await idp.endSessionUrl(`${options.publicUrl.replace(/\/$/, "")}/console`) : undefined;
    sendJson(
      res,
      200,
      { signedOut: true, ...(endSessionUrl ? { endSessionUrl } : {}) },
      { ...NO_STORE, "set-cookie": cookie(SESSION_COOKIE, "", { maxAge: 0, sameSite: "Strict" }) },
    );
  });

  if (!idp) {
    // The routes exist either way (one route table, one OpenAPI document): without an IdP they say so.
    const off = async (_req: unknown, res: HttpResponse) =>
      signInFailed(
        res,
        404,
        new SignInError(
          "sign-in through an identity provider is not configured on this host (CONSOLE_OIDC_CLIENT_ID); use an API key",
        ),
      );
    router.add("GET", "/console/auth/login", off);
    router.add("GET", CONSOLE_CALLBACK_PATH, off);
    return;
  }

  router.add("GET", "/console/auth/login", async (_req, res) => {
    const { state, codeVerifier } = sessions.begin();
    let location: string;
    try {
      location = await idp.authorizationUrl(state, codeVerifier);
    } catch (err) {
      sessions.take(state);
      return signInFailed(res, 502, err);
    }
    res.writeHead(302, {
      location,
      ...NO_STORE,
      "set-cookie": cookie(SIGN_IN_COOKIE, state, { maxAge: 600, sameSite: "Lax", path: CONSOLE_CALLBACK_PATH }),
    });
    res.end();
  });

  router.add("GET", CONSOLE_CALLBACK_PATH, async (req, res) => {
    const query = queryOf(req);
    const clearSignIn = cookie(SIGN_IN_COOKIE, "", { maxAge: 0, sameSite: "Lax", path: CONSOLE_CALLBACK_PATH });
    const error = query.get("error");
    if (error)
      return signInFailed(
        res,
        400,
        new SignInError(`the identity provider refused the sign-in (${error.replace(/[^\w.-]/g, "").slice(0, 60)})`),
        clearSignIn,
      );
    const state = query.get("state") ?? "";
    const code = query.get("code") ?? "";
    if (!state || !code) return signInFailed(res, 400, new SignInError("the callback needs code and state"));
    // The state must be the one this browser was given (its cookie) and one this host is still waiting for (taken
    // here: a second use of the same state, a replay, finds nothing).
    if (cookieOf(req, SIGN_IN_COOKIE) !== state)
      return signInFailed(res, 400, new SignInError("the state does not match a sign-in started in this browser"));
    const pending = sessions.take(state);
    if (!pending)
      return signInFailed(
        res,
        400,
        new SignInError("the state is unknown, expired or already used (a sign-in is finished once)"),
        clearSignIn,
      );
    let accessToken: string;
    try {
      ({ accessToken } = await idp.exchange(code, pending.codeVerifier.reveal()));
    } catch (err) {
      return signInFailed(res, 502, err, clearSignIn);
    }
    let tenant: string;
    let expiresAt: number;
    try {
      const principal = await options.authenticator.authenticate({
        headers: (name) => (name === "authorization" ? `Bearer ${accessToken}` : undefined),
      });
      requireScope(principal, CONSOLE_SCOPE);
      tenant = principal.tenant;
      // The authenticator accepted it, so it is a JWT with an `exp` (token-lifetime.ts requires one).
      expiresAt = Number(decodeJwt(accessToken).exp) * 1000;
    } catch (err) {
      return signInFailed(
        res,
        err instanceof DomainError && err.code === "permission-denied" ? 403 : 401,
        new SignInError(`the identity provider's access token is not accepted by this host: ${(err as Error).message}`),
        clearSignIn,
      );
    }
    const { id } = sessions.create(accessToken, expiresAt, tenant);
    const maxAge = Math.max(1, Math.floor((expiresAt - Date.now()) / 1000));
    res.writeHead(303, {
      location: "/console",
      ...NO_STORE,
      "set-cookie": [cookie(SESSION_COOKIE, id, { maxAge, sameSite: "Strict" }), clearSignIn],
    });
    res.end();
  });
}

/**
 * The console API's cookie way in, before the host authenticates: a request under /console/api/ with no credential
 * header of its own but a session cookie gets the session's access token as its bearer, so the host's one
 * authenticator checks it as every API caller's (tenant, scopes, expiry). Cookie calls that change state must come
 * from PUBLIC_URL's origin and carry the session's CSRF token. Answers false when it refused the request itself.
 */
export function consoleSessionGate(
  options: Pick<ConsoleSignInOptions, "sessions" | "publicUrl" | "secureCookies">,
): (req: HttpRequest, res: HttpResponse) => boolean {
  const cookie = cookieWriter(options.secureCookies);
  return (req, res) => {
    if (!req.url?.startsWith("/console/api/")) return true;
    // An API key or token in a header: not cookie-authenticated, so no CSRF exposure, and the cookie is ignored.
    if (req.headers["authorization"] !== undefined || req.headers["x-api-key"] !== undefined) return true;
    const id = cookieOf(req, SESSION_COOKIE);
    if (!id) return true;
    const session = options.sessions.get(id);
    try {
      if (!session)
        throw new DomainError(
          "unauthenticated",
          "the console session has ended (its access token expired, or it was signed out, or another instance made it): sign in again",
        );
      crossSiteProblem(req, session, options.publicUrl, !SAFE_METHODS.has(req.method ?? "GET"));
    } catch (err) {
      sendOpenwopError(
        res,
        err,
        session ? {} : { "set-cookie": cookie(SESSION_COOKIE, "", { maxAge: 0, sameSite: "Strict" }) },
      );
      return false;
    }
    req.headers["authorization"] = `Bearer ${session.accessToken.reveal()}`;
    return true;
  };
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** A state-changing cookie call must come from the console's own origin and carry the session's CSRF token. */
function crossSiteProblem(
  req: HttpRequest,
  session: Parameters<typeof csrfMatches>[0],
  publicUrl: string,
  changesState: boolean,
): void {
  if (!changesState) return;
  const origin = header(req, "origin");
  const expected = new URL(publicUrl).origin;
  if (origin !== expected)
    throw new DomainError(
      "permission-denied",
      `cross-site request refused: a console call that changes state must come from ${expected} (Origin: ${origin === undefined ? "absent" : JSON.stringify(origin.slice(0, 100))})`,
    );
  if (!csrfMatches(session, header(req, CSRF_HEADER)))
    throw new DomainError(
      "permission-denied",
      `cross-site request refused: the ${CSRF_HEADER} header is absent or is not this session's CSRF token`,
    );
}

function signInFailed(res: HttpResponse, status: number, err: unknown, setCookie?: string): void {
  const reason = err instanceof SignInError ? err.message : "the sign-in failed";
  const body = `Console sign-in failed: ${reason}.\nStart again at /console.\n`;
  res.writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    "x-content-type-options": "nosniff",
    ...NO_STORE,
    ...(setCookie ? { "set-cookie": setCookie } : {}),
  });
  res.end(body);
}

function header(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** One cookie of the request's Cookie header (RFC 6265 §5.4), the first when repeated. */
export function cookieOf(req: HttpRequest, name: string): string | undefined {
  const raw = header(req, "cookie");
  if (!raw) return undefined;
  for (const part of raw.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/** Set-Cookie values: HttpOnly always, Secure over TLS, Path /console unless narrower. */
function cookieWriter(secure: boolean) {
  return (
    name: string,
    value: string,
    options: { maxAge: number; sameSite: "Strict" | "Lax"; path?: string },
  ): string =>
    [
      `${name}=${value}`,
      `Path=${options.path ?? "/console"}`,
      `Max-Age=${options.maxAge}`,
      "HttpOnly",
      `SameSite=${options.sameSite}`,
      ...(secure ? ["Secure"] : []),
    ].join("; ");
}
