import { createHash } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { verifyBundle } from "../../src/cli/evidence-verify.js";
import { canonicalJson } from "../../src/domain/canonical-json.js";
import {
  ATTESTED_MEMBERS,
  attestationInput,
  rowId,
  tally,
  witnessInput,
  type EvidenceBundle,
} from "../../src/domain/evidence-bundle.js";
import { loadEvidenceKey, type EvidenceKey } from "../../src/secrets/evidence-key.js";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("verifyBundle on a bundle signed here", () => {
  let key: EvidenceKey;
  let discovery: Record<string, unknown>;
  let bundle: EvidenceBundle;

  beforeAll(async () => {
    key = (await loadEvidenceKey({ dataDir: await mkdtemp(join(tmpdir(), "verify-")), production: false }))!;
    discovery = { protocolVersion: "1.0", signingKeys: [key.listing()] };
    const rows = [
      { id: rowId("bound-is-derived"), scenario: "durability/bound-is-derived", result: "executed-pass" as const },
    ];
    const results = { totals: tally(rows), requirements: rows };
    bundle = {
      bundleVersion: "3",
      generatedAt: "2026-11-28T00:00:00.000Z",
      suite: { name: "@openwop/openwop-conformance", version: "x", targetMajor: 1, specArtifactsVersion: "2.34.0" },
      host: { name: "h", version: "1", build: { kind: "commit", id: "abc" } },
      discovery: {
        url: "http://h/.well-known/openwop",
        sha256: sha256(canonicalJson(discovery)),
        protocolVersions: ["1.0"],
        preferredVersion: "1.0",
        document: discovery,
      },
      claimedProfiles: [],
      results,
      witnessSha256: sha256(witnessInput({ results, assertionCount: 1 })),
      assertionCount: 1,
    };
    bundle.signature = {
      alg: "ed25519",
      keyId: key.keyId,
      sig: key.sign(attestationInput(bundle)),
      over: [...ATTESTED_MEMBERS],
    };
  });

  it("accepts it, and derives no rung from a bundle without kill rows", () => {
    expect(verifyBundle(bundle, discovery)).toEqual({ ok: true, problems: [], keyId: key.keyId });
  });

  it("refuses what is not a v3 bundle, with the first fault named", () => {
    expect(verifyBundle([], discovery).problems).toEqual(["the file is not a JSON object"]);
    expect(verifyBundle({ ...bundle, bundleVersion: "2" }, discovery).problems).toEqual([
      'bundleVersion is "2"; this verifier reads bundle v3',
    ]);
    const { witnessSha256: _w, ...noWitness } = bundle;
    expect(verifyBundle(noWitness, discovery).problems).toEqual([
      "witnessSha256 is missing or not a SHA-256 hex digest",
    ]);
  });

  it("refuses a signature over other members, of another algorithm, or not 64 bytes", () => {
    const over = { ...bundle, signature: { ...bundle.signature!, over: ["witnessSha256"] } };
    expect(verifyBundle(over, discovery).problems[0]).toMatch(
      /^signature\.over must list exactly witnessSha256, host\.build/,
    );
    const alg = { ...bundle, signature: { ...bundle.signature!, alg: "es256" } };
    expect(verifyBundle(alg, discovery).problems).toContain(
      'signature.alg is "es256"; bundle v3 is signed with ed25519',
    );
    const short = { ...bundle, signature: { ...bundle.signature!, sig: "AAAA" } };
    expect(verifyBundle(short, discovery).problems).toContain(
      "signature.sig is not a base64url Ed25519 signature (86 characters)",
    );
  });

  it("refuses totals that do not tally the rows and a captured document that does not hash to discovery.sha256", () => {
    const totals = structuredClone(bundle);
    totals.results.totals.executedPass = 5;
    expect(verifyBundle(totals, discovery).problems).toContain("results.totals do not tally results.requirements");
    const doc = structuredClone(bundle);
    doc.discovery.document = { ...discovery, extra: true };
    expect(verifyBundle(doc, discovery).problems).toEqual(["discovery.document does not hash to discovery.sha256"]);
  });
});
