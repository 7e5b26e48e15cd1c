import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { SecretValue } from "../secrets/secret-value.js";

/** A console sign-in under way: what the callback needs to finish it (RFC 7636's verifier). */
export interface PendingSignIn {
  codeVerifier: SecretValue<string>;
  expiresAt: number;
}

/** A signed-in console: the access token the IdP gave, until it expires; the CSRF token its page sends. */
export interface ConsoleSession {
  accessToken: SecretValue<string>;
  csrfToken: SecretValue<string>;
  /** The token's `exp`, in ms: the session ends with it. */
  expiresAt: number;
  /** The tenant the token gave at sign-in, for the page's header (every call is authenticated again). */
  tenant: string;
}

/** A sign-in must be finished (the IdP's page answered) within this long. */
const SIGN_IN_TTL_MS = 10 * 60_000;
/** Bounds the memory unauthenticated visitors can take by starting sign-ins and never finishing them. */
const MAX_PENDING = 10_000;
const MAX_SESSIONS = 100_000;

/** 256 random bits, base64url: session ids, states, PKCE verifiers and CSRF tokens. */
export function randomToken(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * The console's sessions, in this instance's memory. The browser holds only an opaque random id (its cookie); the
 * access token stays here, so a logged or leaked cookie is useless anywhere but against this instance, and only
 * until the token expires or the operator signs out. Entries are keyed by the SHA-256 of the id, so not even this
 * map holds a replayable cookie value. Another instance does not know the session (docs/security.md "Console
 * sign-in": sticky sessions, or sign in again there).
 */
export class ConsoleSessions {
  private readonly pending = new Map<string, PendingSignIn>();
  private readonly sessions = new Map<string, ConsoleSession>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A new sign-in: its `state` (the key the callback must bring back) and PKCE verifier. */
  begin(): { state: string; codeVerifier: string } {
    this.sweep(this.pending);
    if (this.pending.size >= MAX_PENDING) this.pending.delete(this.pending.keys().next().value!);
    const state = randomToken();
    const codeVerifier = randomToken();
    this.pending.set(keyOf(state), {
      codeVerifier: new SecretValue(codeVerifier),
      expiresAt: this.now() + SIGN_IN_TTL_MS,
    });
    return { state, codeVerifier };
  }

  /** The sign-in `state` names, taken: a second callback with the same state finds nothing (no replay). */
  take(state: string): PendingSignIn | undefined {
    const key = keyOf(state);
    const found = this.pending.get(key);
    this.pending.delete(key);
    return found && found.expiresAt > this.now() ? found : undefined;
  }

  /** A session for `accessToken` until `expiresAt` (ms): its cookie value (id) and CSRF token. */
  create(accessToken: string, expiresAt: number, tenant: string): { id: string; csrfToken: string } {
    this.sweep(this.sessions);
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    const id = randomToken();
    const csrfToken = randomToken();
    this.sessions.set(keyOf(id), {
      accessToken: new SecretValue(accessToken),
      csrfToken: new SecretValue(csrfToken),
      expiresAt,
      tenant,
    });
    return { id, csrfToken };
  }

  /** The live session of a cookie value; an expired one is forgotten. */
  get(id: string): ConsoleSession | undefined {
    const key = keyOf(id);
    const session = this.sessions.get(key);
    if (session && session.expiresAt <= this.now()) this.sessions.delete(key);
    return session && session.expiresAt > this.now() ? session : undefined;
  }

  end(id: string): void {
    this.sessions.delete(keyOf(id));
  }

  private sweep(map: Map<string, { expiresAt: number }>): void {
    const now = this.now();
    for (const [key, entry] of map) if (entry.expiresAt <= now) map.delete(key);
  }
}

/** Whether `presented` is the session's CSRF token, in constant time. */
export function csrfMatches(session: ConsoleSession, presented: string | undefined): boolean {
  if (!presented) return false;
  const expected = Buffer.from(session.csrfToken.reveal());
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function keyOf(value: string): string {
  return createHash("sha256").update(value).digest("base64url");
}
