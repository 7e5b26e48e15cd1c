import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Signed interrupt tokens (OpenWOP interrupt.md): a capability to inspect or resolve one pending interrupt
 * without an API key.
 *
 *   token   = base64url(payloadJSON) + "." + base64url(HMAC-SHA256(key, base64url(payloadJSON)))
 *   payload = { runId, nodeId, interruptId, expiresAt, intent: "resolve" | "inspect", kid }
 *
 * `kid` names the key that signed it, so keys can rotate: the first configured key signs, every configured
 * key verifies. Tokens are not stored; whether one may still be used is decided by the run's state. Issued
 * from the interrupt's own request time, a token is a pure function of the interrupt and the signing key: every
 * read, subscriber and instance shows the same token for one interrupt.
 */
export interface InterruptTokenKey {
  kid: string;
  secret: Buffer;
}

export type InterruptTokenIntent = "resolve" | "inspect";

export interface InterruptTokenPayload {
  runId: string;
  nodeId: string;
  interruptId: string;
  /** ISO 8601 instant after which the token is refused (410). */
  expiresAt: string;
  intent: InterruptTokenIntent;
  kid: string;
}

/** Why a token could not be read. `malformed`: not even token-shaped; `invalid`: shaped right but not one of ours. */
export class InterruptTokenError extends Error {
  override readonly name = "InterruptTokenError";
  constructor(
    readonly reason: "malformed" | "invalid",
    message: string,
  ) {
    super(message);
  }
}

/** The interrupt a token is issued for. `expiresAt` is the interrupt's own deadline, if it has one. */
export interface TokenSubject {
  runId: string;
  nodeId: string;
  interruptId: string;
  expiresAt?: string;
  /** When the interrupt was raised: the TTL runs from here (without it, from now). */
  issuedAt?: string;
}

export const DEFAULT_INTERRUPT_TOKEN_TTL_MS = 30 * 60 * 1000;
/** Longer strings are refused before any decoding. */
const MAX_TOKEN_LENGTH = 4096;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const KID_SHAPE = /^[A-Za-z0-9._-]{1,64}$/;

export class InterruptTokenSigner {
  private readonly keys: ReadonlyMap<string, Buffer>;
  private readonly signingKey: InterruptTokenKey;
  private readonly ttlMs: number;
  private readonly clock: () => Date;

  constructor(keys: readonly InterruptTokenKey[], options: { ttlMs?: number; clock?: () => Date } = {}) {
    const first = keys[0];
    if (!first) throw new Error("interrupt tokens need at least one signing key");
    for (const key of keys) {
      if (!KID_SHAPE.test(key.kid))
        throw new Error(`interrupt token key id "${key.kid}" must be 1-64 characters of A-Z a-z 0-9 . _ -`);
    }
    this.signingKey = first;
    this.keys = new Map(keys.map((k) => [k.kid, k.secret]));
    if (this.keys.size !== keys.length) throw new Error("interrupt token key ids must be unique");
    this.ttlMs = options.ttlMs ?? DEFAULT_INTERRUPT_TOKEN_TTL_MS;
    this.clock = options.clock ?? (() => new Date());
  }

  /** A token for `subject`, valid for the configured TTL from `issuedAt` (or now), never past the interrupt's own deadline. */
  issue(subject: TokenSubject, intent: InterruptTokenIntent): string {
    const issuedAt = subject.issuedAt ? Date.parse(subject.issuedAt) : Number.NaN;
    let expires = (Number.isNaN(issuedAt) ? this.clock().getTime() : issuedAt) + this.ttlMs;
    if (subject.expiresAt) expires = Math.min(expires, Date.parse(subject.expiresAt));
    const payload: InterruptTokenPayload = {
      runId: subject.runId,
      nodeId: subject.nodeId,
      interruptId: subject.interruptId,
      expiresAt: new Date(expires).toISOString(),
      intent,
      kid: this.signingKey.kid,
    };
    const encoded = Buffer.from(JSON.stringify(payload), "utf8").toString("base64url");
    return `${encoded}.${mac(this.signingKey.secret, encoded).toString("base64url")}`;
  }

  /**
   * Checks shape and signature (constant-time) and returns the payload with whether it has expired. It says
   * nothing about the interrupt itself: the caller checks that against the run.
   */
  verify(token: string): { payload: InterruptTokenPayload; expired: boolean } {
    if (typeof token !== "string" || token.length > MAX_TOKEN_LENGTH || !TOKEN_SHAPE.test(token)) {
      throw new InterruptTokenError(
        "malformed",
        "the interrupt token is malformed: expected <payload>.<signature> in base64url",
      );
    }
    const [encoded, signature] = token.split(".") as [string, string];
    const payload = parsePayload(encoded);
    const secret = payload ? this.keys.get(payload.kid) : undefined;
    const given = Buffer.from(signature, "base64url");
    // Compute a MAC even for an unknown key, so both failures cost the same.
    const expected = mac(secret ?? this.signingKey.secret, encoded);
    const signatureOk = given.length === expected.length && timingSafeEqual(given, expected);
    if (!payload || !secret || !signatureOk)
      throw new InterruptTokenError(
        "invalid",
        "the interrupt token is not valid here (unknown, altered or signed with a retired key)",
      );
    return { payload, expired: Date.parse(payload.expiresAt) <= this.clock().getTime() };
  }
}

function mac(secret: Buffer, encodedPayload: string): Buffer {
  return createHmac("sha256", secret).update(encodedPayload, "ascii").digest();
}

function parsePayload(encoded: string): InterruptTokenPayload | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(encoded, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const p = value as Record<string, unknown>;
  const strings = ["runId", "nodeId", "interruptId", "expiresAt", "kid"] as const;
  if (strings.some((k) => typeof p[k] !== "string" || (p[k] as string).length === 0)) return undefined;
  if (p["intent"] !== "resolve" && p["intent"] !== "inspect") return undefined;
  if (Number.isNaN(Date.parse(p["expiresAt"] as string))) return undefined;
  return {
    runId: p["runId"] as string,
    nodeId: p["nodeId"] as string,
    interruptId: p["interruptId"] as string,
    expiresAt: p["expiresAt"] as string,
    intent: p["intent"],
    kid: p["kid"] as string,
  };
}
