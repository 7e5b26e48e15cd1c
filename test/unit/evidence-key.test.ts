import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { signingKeysMember } from "../../src/domain/evidence-bundle.js";
import { EVIDENCE_KEY_FILE, loadEvidenceKey, parseEvidenceKey, verifyEd25519 } from "../../src/secrets/evidence-key.js";
import { SecretValue } from "../../src/secrets/secret-value.js";

describe("the evidence key", () => {
  it("outside production: generated once under DATA_DIR (mode 0600) and the same on every load", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "evidence-key-"));
    const first = (await loadEvidenceKey({ dataDir, production: false }))!;
    const again = (await loadEvidenceKey({ dataDir, production: false }))!;
    expect(again.keyId).toBe(first.keyId);
    expect(first.keyId).toMatch(/^evidence-[A-Za-z0-9_-]{43}$/);
    expect(first.publicKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await stat(join(dataDir, EVIDENCE_KEY_FILE))).mode & 0o777).toBe(0o600);
    const sig = first.sign("input");
    expect(sig).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(verifyEd25519(again.publicKey, "input", sig)).toBe(true);
    expect(verifyEd25519(again.publicKey, "inpuT", sig)).toBe(false);
    expect(verifyEd25519("not-a-key", "input", sig)).toBe(false);
  });

  it("in production: only the configured key; without one, none (no key listed, no bundle signed)", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "evidence-key-"));
    expect(await loadEvidenceKey({ dataDir, production: true })).toBeUndefined();
    const jwk = { ...generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }), kid: "evidence-2026" };
    const key = await loadEvidenceKey({ configured: new SecretValue(JSON.stringify(jwk)), dataDir, production: true });
    expect(key?.listing()).toEqual({
      keyId: "evidence-2026",
      alg: "ed25519",
      publicKey: jwk.x,
      use: "certification-bundle",
    });
    expect(key?.source).toBe("EVIDENCE_SIGNING_KEY");
  });

  it("refuses a key that is not Ed25519, does not parse, or has a bad kid, naming the source and never the key", async () => {
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "pem", type: "pkcs8" });
    await expect(parseEvidenceKey(String(ec), "EVIDENCE_SIGNING_KEY")).rejects.toThrow(
      "EVIDENCE_SIGNING_KEY: a ec key; evidence bundles are signed with Ed25519 only",
    );
    await expect(parseEvidenceKey("{not json", "EVIDENCE_SIGNING_KEY")).rejects.toThrow(
      /does not parse as a private Ed25519 key/,
    );
    const jwk = { ...generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }), kid: "a/b" };
    await expect(parseEvidenceKey(JSON.stringify(jwk), "EVIDENCE_SIGNING_KEY")).rejects.toThrow(/"kid" must be/);
  });

  it("signingKeysMember lists every key, or nothing without keys", () => {
    expect(signingKeysMember([])).toEqual({});
    const key = {
      keyId: "k",
      alg: "ed25519" as const,
      publicKey: "x".repeat(43),
      use: "certification-bundle" as const,
    };
    expect(signingKeysMember([key])).toEqual({ signingKeys: [key] });
  });
});
