import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { CompactSign, compactVerify, importJWK } from "jose";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import { loadSigningKeyRing, parseSigningKeys, SIGNING_KEY_FILE } from "../../src/secrets/signing-key-ring.js";
import { SecretValue } from "../../src/secrets/secret-value.js";
import { testSigningKeys, testTokenKeys } from "../support/openwop-client.js";

const ecPem = () =>
  generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "pem", type: "pkcs8" }).toString();
const edJwk = (kid?: string) => ({
  ...generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }),
  ...(kid ? { kid } : {}),
});

describe("SIGNING_KEYS parsing", () => {
  it("takes PEM blocks (also with literal \\n from an env file), a JWK, an array of JWKs and a JWKS; EC P-256 is ES256, Ed25519 EdDSA", () => {
    const pem = ecPem();
    expect(parseSigningKeys(`${pem}\n${testSigningKeys()}`).map((k) => k.alg)).toEqual(["ES256", "EdDSA"]);
    expect(parseSigningKeys(pem.replace(/\n/g, "\\n")).map((k) => k.alg)).toEqual(["ES256"]);
    expect(parseSigningKeys(JSON.stringify(edJwk("a")))).toMatchObject([{ kid: "a", alg: "EdDSA" }]);
    expect(parseSigningKeys(JSON.stringify([edJwk("a"), edJwk("b")])).map((k) => k.kid)).toEqual(["a", "b"]);
    expect(parseSigningKeys(JSON.stringify({ keys: [edJwk()] }))).toHaveLength(1);
  });

  it.each([
    ["garbage", "not a key", "SIGNING_KEYS does not parse: expected PEM private keys"],
    ["broken JSON", "{not json", "SIGNING_KEYS does not parse: it starts like JSON but is not valid JSON"],
    [
      "a broken PEM",
      "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
      "SIGNING_KEYS entry 1 does not parse as a PEM private key",
    ],
    [
      "a broken JWK",
      JSON.stringify({ kty: "OKP", crv: "Ed25519", x: "AA", d: "AA" }),
      "SIGNING_KEYS entry 1 does not parse as a private JWK",
    ],
    [
      "a public PEM",
      generateKeyPairSync("ed25519").publicKey.export({ format: "pem", type: "spki" }).toString(),
      "SIGNING_KEYS entry 1: the private key is missing",
    ],
    [
      "a public JWK",
      JSON.stringify(generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" })),
      "SIGNING_KEYS entry 1: the private key is missing",
    ],
    [
      "an HMAC key",
      JSON.stringify({ kty: "oct", k: "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA", kid: "h" }),
      'HMAC (kty "oct") keys are refused',
    ],
    [
      "an RSA key",
      generateKeyPairSync("rsa", { modulusLength: 1024 })
        .privateKey.export({ format: "pem", type: "pkcs8" })
        .toString(),
      "a rsa key; only EC P-256 (ES256) and Ed25519 (EdDSA)",
    ],
    [
      "a P-384 key",
      generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
      "a EC secp384r1 key",
    ],
    ["duplicate kids", JSON.stringify([edJwk("a"), edJwk("a")]), "key ids (kid) must be unique"],
  ])("refuses %s with a clear message that echoes no key material", (_what, raw, message) => {
    expect(() => parseSigningKeys(raw)).toThrow(message);
    const error = (() => {
      try {
        parseSigningKeys(raw);
      } catch (e) {
        return (e as Error).message;
      }
      return "";
    })();
    for (const secret of [/"d":/, /[A-Za-z0-9+/]{40}/]) expect(error).not.toMatch(secret);
  });

  it("config: a bad entry is a ConfigError; production without SIGNING_KEYS refuses to start; the value stays a secret", () => {
    expect(() => loadConfig({ SIGNING_KEYS: "nope" })).toThrow(ConfigError);
    const production = {
      NODE_ENV: "production",
      MONGODB_URI: "mongodb://db",
      PUBLIC_URL: "https://a2a.example.com",
      API_KEYS: JSON.stringify([{ id: "k", tenant: "t", scopes: ["runs:read"], keySha256: "0".repeat(64) }]),
      PUSH_ENABLED: "false",
      A2A_PEER_PUSH: "false",
      INTERRUPT_TOKEN_KEYS: testTokenKeys(),
    };
    expect(() => loadConfig(production)).toThrow(ConfigError);
    expect(() => loadConfig(production)).toThrow("NODE_ENV=production needs SIGNING_KEYS");
    const pem = testSigningKeys();
    const config = loadConfig({ ...production, SIGNING_KEYS: pem });
    expect(config.signingKeys.keys?.reveal()).toBe(pem);
    expect(JSON.stringify(config)).not.toContain("PRIVATE KEY");
    expect(inspect(config, { depth: 10 })).not.toContain("PRIVATE KEY");
  });
});

describe("the signing key ring", () => {
  it("the first key signs, all are published without private parts; a key without kid gets its RFC 7638 thumbprint", async () => {
    const ring = await loadSigningKeyRing({
      configured: new SecretValue(`${ecPem()}\n${testSigningKeys()}`),
      dataDir: "/nonexistent",
      production: true,
    });
    expect(ring.source).toBe("SIGNING_KEYS");
    expect(ring.keys.map((k) => k.alg)).toEqual(["ES256", "EdDSA"]);
    expect(ring.current).toBe(ring.keys[0]);
    const jwks = ring.jwks();
    expect(jwks.keys.map((k) => k.kid)).toEqual(ring.keys.map((k) => k.kid));
    for (const key of jwks.keys) {
      expect(key.d).toBeUndefined();
      expect(key.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(key).toMatchObject({ use: "sig" });
    }
    expect(inspect(ring, { depth: 10 })).not.toMatch(/PRIVATE|"d"/);
  });

  it("production never generates a key; outside it one ES256 key is generated once under DATA_DIR (0600) and kept", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "signing-keys-"));
    await expect(loadSigningKeyRing({ dataDir, production: true })).rejects.toThrow(
      "NODE_ENV=production needs SIGNING_KEYS",
    );
    const [first, second] = await Promise.all([
      loadSigningKeyRing({ dataDir, production: false }),
      loadSigningKeyRing({ dataDir, production: false }),
    ]);
    expect(first.jwks()).toEqual(second.jwks());
    expect((await loadSigningKeyRing({ dataDir, production: false })).jwks()).toEqual(first.jwks());
    expect(first.current.alg).toBe("ES256");
    const path = join(dataDir, SIGNING_KEY_FILE);
    expect(first.source).toBe(path);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(path, "utf8")).keys[0].d).toEqual(expect.any(String));
    // What it signs verifies with what it publishes.
    const jws = await new CompactSign(new TextEncoder().encode("hello"))
      .setProtectedHeader({ alg: "ES256", kid: first.current.kid })
      .sign(first.current.privateKey.reveal());
    const verified = await compactVerify(jws, await importJWK(first.jwks().keys[0]!, "ES256"));
    expect(new TextDecoder().decode(verified.payload)).toBe("hello");
  });
});
