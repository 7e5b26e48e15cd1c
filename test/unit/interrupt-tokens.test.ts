import { createHmac } from "node:crypto";
import { mkdtemp, readFile, stat, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { testSigningKeys } from "../support/openwop-client.js";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import {
  INTERRUPT_TOKEN_KEY_FILE,
  loadInterruptTokenKeys,
  parseInterruptTokenKeys,
} from "../../src/interrupts/interrupt-token-keys.js";
import {
  InterruptTokenError,
  InterruptTokenSigner,
  type InterruptTokenKey,
} from "../../src/interrupts/interrupt-tokens.js";

const keyA: InterruptTokenKey = { kid: "a", secret: Buffer.alloc(32, 1) };
const keyB: InterruptTokenKey = { kid: "b", secret: Buffer.alloc(32, 2) };
const subject = { runId: "run-1", nodeId: "gate", interruptId: "int-1" };
const T0 = Date.parse("2026-01-01T00:00:00.000Z");

function decode(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8")) as Record<string, unknown>;
}

describe("InterruptTokenSigner", () => {
  it("token = base64url(payload).base64url(HMAC-SHA256(key, base64url(payload)))", () => {
    const signer = new InterruptTokenSigner([keyA], { clock: () => new Date(T0) });
    const token = signer.issue(subject, "resolve");
    const [payload, signature] = token.split(".") as [string, string];
    expect(signature).toBe(createHmac("sha256", keyA.secret).update(payload).digest("base64url"));
    expect(decode(token)).toEqual({
      ...subject,
      expiresAt: new Date(T0 + 30 * 60 * 1000).toISOString(),
      intent: "resolve",
      kid: "a",
    });
    expect(signer.verify(token)).toEqual({ payload: decode(token), expired: false });
  });

  it("expiry: the TTL from issue time, capped at the interrupt's deadline; expired once it passes", () => {
    let now = T0;
    const signer = new InterruptTokenSigner([keyA], { ttlMs: 60_000, clock: () => new Date(now) });
    expect(decode(signer.issue(subject, "inspect"))["expiresAt"]).toBe(new Date(T0 + 60_000).toISOString());
    const capped = signer.issue({ ...subject, expiresAt: new Date(T0 + 5_000).toISOString() }, "resolve");
    expect(decode(capped)["expiresAt"]).toBe(new Date(T0 + 5_000).toISOString());
    now = T0 + 4_999;
    expect(signer.verify(capped).expired).toBe(false);
    now = T0 + 5_000;
    expect(signer.verify(capped).expired).toBe(true);
  });

  it("rotation: the first key signs, every configured key verifies, a dropped key no longer does", () => {
    const old = new InterruptTokenSigner([keyB]).issue(subject, "resolve");
    const rotated = new InterruptTokenSigner([keyA, keyB]);
    expect(rotated.verify(old).payload.kid).toBe("b");
    expect(decode(rotated.issue(subject, "resolve"))["kid"]).toBe("a");
    expect(() => new InterruptTokenSigner([keyA]).verify(old)).toThrow(InterruptTokenError);
  });

  it("refuses malformed tokens (malformed) and altered ones (invalid)", () => {
    const signer = new InterruptTokenSigner([keyA]);
    const token = signer.issue(subject, "inspect");
    const [payload, signature] = token.split(".") as [string, string];
    const reason = (t: string) => {
      try {
        signer.verify(t);
        return "accepted";
      } catch (err) {
        return (err as InterruptTokenError).reason;
      }
    };
    for (const bad of [
      "",
      "abc",
      `${payload}.`,
      `${payload}.${signature}.x`,
      `${payload}.${signature}=`,
      "x".repeat(5000),
    ])
      expect(reason(bad)).toBe("malformed");
    const elevated = Buffer.from(JSON.stringify({ ...decode(token), intent: "resolve" })).toString("base64url");
    const otherKid = Buffer.from(JSON.stringify({ ...decode(token), kid: "zz" })).toString("base64url");
    const notJson = Buffer.from("not json").toString("base64url");
    const missingField = Buffer.from(JSON.stringify({ ...decode(token), interruptId: undefined })).toString(
      "base64url",
    );
    for (const bad of [
      `${elevated}.${signature}`,
      `${otherKid}.${signature}`,
      `${payload}.${signature.slice(0, -2)}`,
      `${notJson}.${signature}`,
      `${missingField}.${signature}`,
    ]) {
      expect(reason(bad)).toBe("invalid");
    }
    // Even a correctly signed payload must have every field.
    const unsignedShape = Buffer.from(JSON.stringify({ runId: "r" })).toString("base64url");
    expect(
      reason(`${unsignedShape}.${createHmac("sha256", keyA.secret).update(unsignedShape).digest("base64url")}`),
    ).toBe("invalid");
    expect(reason(token)).toBe("accepted");
  });
});

describe("interrupt token keys", () => {
  const secret = Buffer.alloc(32, 5).toString("base64");

  it("parses kid:base64secret lists and refuses bad entries without echoing secrets", () => {
    expect(parseInterruptTokenKeys(`k1:${secret},k0:${secret.replace(/\+/g, "-")}`).map((k) => k.kid)).toEqual([
      "k1",
      "k0",
    ]);
    expect(parseInterruptTokenKeys(`# comment, with a comma\nk1:${secret}\n`)).toHaveLength(1);
    expect(() => parseInterruptTokenKeys("")).toThrow("holds no key");
    expect(() => parseInterruptTokenKeys(`:${secret}`)).toThrow("key id");
    expect(() => parseInterruptTokenKeys("k1:not base64!")).toThrow("not base64");
    expect(() => parseInterruptTokenKeys(`k1:${Buffer.alloc(16).toString("base64")}`)).toThrow("at least 32 bytes");
    expect(() => parseInterruptTokenKeys(`k1:${secret},k1:${secret}`)).toThrow("unique");
    try {
      parseInterruptTokenKeys(`k1:${secret.slice(0, 20)}`);
    } catch (err) {
      expect((err as Error).message).not.toContain(secret.slice(0, 20));
    }
  });

  it("development: generates one key under DATA_DIR (mode 0600) and reuses it", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "token-keys-"));
    const [first, second] = await Promise.all([
      loadInterruptTokenKeys({ dataDir, production: false }),
      loadInterruptTokenKeys({ dataDir, production: false }),
    ]);
    expect(first.keys).toHaveLength(1);
    expect(second.keys).toEqual(first.keys);
    expect((await loadInterruptTokenKeys({ dataDir, production: false })).keys).toEqual(first.keys);
    const path = join(dataDir, INTERRUPT_TOKEN_KEY_FILE);
    expect(first.source).toBe(path);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readFile(path, "utf8")).toContain(`${first.keys[0]!.kid}:`);
  });

  it("configured keys win; production never generates one", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "token-keys-"));
    const configured = [{ kid: "cfg", secret: Buffer.alloc(32, 1) }];
    expect(await loadInterruptTokenKeys({ configured, dataDir, production: true })).toEqual({
      keys: configured,
      source: "INTERRUPT_TOKEN_KEYS",
    });
    await expect(loadInterruptTokenKeys({ dataDir, production: true })).rejects.toThrow(
      "NODE_ENV=production needs INTERRUPT_TOKEN_KEYS",
    );
    await mkdir(join(dataDir, "keys"), { recursive: true });
    await writeFile(join(dataDir, INTERRUPT_TOKEN_KEY_FILE), "garbage");
    await expect(loadInterruptTokenKeys({ dataDir, production: false })).rejects.toThrow("interrupt-token.key");
  });
});

describe("configuration of the OpenWOP REST surface", () => {
  const secret = Buffer.alloc(32, 5).toString("base64");

  it("defaults: seams on outside production, 30-minute tokens, 24 h idempotency records", () => {
    const config = loadConfig({});
    expect(config.conformanceSeams).toBe(true);
    expect(config.interruptTokens.ttlMs).toBe(30 * 60 * 1000);
    expect(config.interruptTokens.keys).toBeUndefined();
    expect(config.idempotencyTtlMs).toBe(24 * 60 * 60 * 1000);
    expect(loadConfig({ NODE_ENV: "test" }).conformanceSeams).toBe(true);
    expect(loadConfig({ CONFORMANCE_SEAMS: "false" }).conformanceSeams).toBe(false);
  });

  it("keys are parsed, kept secret, and never printed", () => {
    const config = loadConfig({ INTERRUPT_TOKEN_KEYS: `k1:${secret}`, INTERRUPT_TOKEN_TTL_SECONDS: "60" });
    expect(config.interruptTokens.keys?.reveal().map((k) => k.kid)).toEqual(["k1"]);
    expect(config.interruptTokens.ttlMs).toBe(60_000);
    expect(JSON.stringify(config)).not.toContain(secret);
  });

  it.each([
    [{ INTERRUPT_TOKEN_KEYS: "k1:short" }, "at least 32 bytes"],
    [{ INTERRUPT_TOKEN_TTL_SECONDS: "0" }, "INTERRUPT_TOKEN_TTL_SECONDS must be a whole number"],
    [{ IDEMPOTENCY_TTL_HOURS: "1" }, "IDEMPOTENCY_TTL_HOURS must be a whole number between 24"],
    [{ CONFORMANCE_SEAMS: "maybe" }, "CONFORMANCE_SEAMS must be true or false"],
  ])("refuses %j", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it("production: seams off by default, and no start without INTERRUPT_TOKEN_KEYS", () => {
    const production = {
      NODE_ENV: "production",
      MONGODB_URI: "mongodb://db",
      PUBLIC_URL: "https://a2a.example.com",
      API_KEYS: JSON.stringify([{ id: "k", tenant: "t", scopes: ["runs:read"], keySha256: "0".repeat(64) }]),
      PUSH_ENABLED: "false",
      A2A_PEER_PUSH: "false",
      SIGNING_KEYS: testSigningKeys(),
    };
    expect(() => loadConfig(production)).toThrow("NODE_ENV=production needs INTERRUPT_TOKEN_KEYS");
    const config = loadConfig({ ...production, INTERRUPT_TOKEN_KEYS: `k1:${secret}` });
    expect(config.conformanceSeams).toBe(false);
  });
});
