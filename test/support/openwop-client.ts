import { generateKeyPairSync } from "node:crypto";
import { expect } from "vitest";

/** Plain-fetch helpers for the OpenWOP REST surface (no client library: the wire is what is tested). */
export interface Answer<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export function openwopClient(baseUrl: string) {
  async function call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer<T>> {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as T) : (undefined as T) };
  }

  /** Polls the snapshot until `done` holds (or fails the test after `timeoutMs`). */
  async function waitForRun(runId: string, done: (snapshot: any) => boolean, timeoutMs = 10_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { status, body } = await call("GET", `/v1/runs/${runId}`);
      expect(status).toBe(200);
      if (done(body)) return body;
      if (Date.now() > deadline)
        throw new Error(`run ${runId} did not reach the expected state; last: ${JSON.stringify(body)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async function startRun(
    workflowId: string,
    inputs?: Record<string, unknown>,
    headers: Record<string, string> = {},
  ): Promise<string> {
    const { status, body } = await call("POST", "/v1/runs", { workflowId, ...(inputs ? { inputs } : {}) }, headers);
    expect(status).toBe(201);
    return body.runId as string;
  }

  return { call, waitForRun, startRun };
}

const CANONICAL_REST_CODES = new Set([
  "validation_error",
  "not_found",
  "run_terminal",
  "unsupported_media_type",
  "payload_too_large",
  "forbidden",
  "unauthenticated",
  "conflict",
  "idempotency_key_mismatch",
  "interrupt_not_found",
  "interrupt_already_resolved",
  "interrupt_expired",
  // The invoke seam (the host as an A2A client): OpenWOP's interop codes.
  "interop_version_unsupported",
  "external_call_failed",
  "not_implemented",
  "internal_error",
]);

/** The REST error envelope: exactly `{error, message, details?}`, a canonical code and a readable message. */
export function expectErrorEnvelope(body: any, error?: string): void {
  expect(body).toBeTypeOf("object");
  const keys = Object.keys(body).sort();
  expect(keys.filter((k) => k !== "details")).toEqual(["error", "message"]);
  expect(keys.length).toBeLessThanOrEqual(3);
  expect(body.error).toBeTypeOf("string");
  expect(CANONICAL_REST_CODES.has(body.error)).toBe(true);
  expect(body.message).toBeTypeOf("string");
  expect(body.message.length).toBeGreaterThan(10);
  if ("details" in body) expect(body.details).toBeTypeOf("object");
  if (error) expect(body.error).toBe(error);
}

/** The payload of a signed token (base64url JSON before the dot). */
export function tokenPayload(token: string): Record<string, any> {
  return JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8")) as Record<string, any>;
}

/** SIGNING_KEYS for a production-mode test: one fresh Ed25519 private key as PEM. */
export function testSigningKeys(): string {
  return generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }).toString();
}

export function testTokenKeys(): string {
  return `k1:${Buffer.alloc(32, 7).toString("base64")},k0:${Buffer.alloc(32, 3).toString("base64")}`;
}
