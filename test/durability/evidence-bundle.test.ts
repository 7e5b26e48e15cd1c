// `openwop-a2a-host evidence run` end to end: three real host processes on one database, real SIGKILLs, poison
// work that kills its own process RECOVERY_MAX_ATTEMPTS times across restarts, a bundle v3 signed with the
// Ed25519 key the host keeps under DATA_DIR; then the verifier, which resolves the key in the discovery document
// of a host started afterwards on the same data directory, accepts it, and refuses a tampered field, a missing
// signature, a key that is not published, a wrong key, a blocked total, and a rung claimed without a passed
// poison-exhaustion row.
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { runEvidence } from "../../src/cli/evidence-run.js";
import { verifyBundle, verifyCommand } from "../../src/cli/evidence-verify.js";
import { attestationInput, rowId, tally, witnessInput, type EvidenceBundle } from "../../src/domain/evidence-bundle.js";
import { loadEvidenceKey } from "../../src/secrets/evidence-key.js";
import { createHash } from "node:crypto";
import { HOST_MAIN, startServerProcess, type ServerProcess } from "../support/server-process.js";

const TTL_MS = 1_500;
const HEARTBEAT_MS = 300;
const MAX_ATTEMPTS = 3;
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const clone = (b: EvidenceBundle): EvidenceBundle => JSON.parse(JSON.stringify(b)) as EvidenceBundle;

describe("evidence bundle v3 from a three-instance run", () => {
  const mongoUri = inject("mongoUri");
  let dataDir: string;
  let out: string;
  let bundle: EvidenceBundle;
  let host: ServerProcess;
  let discovery: Record<string, unknown>;
  const lines: string[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "evidence-"));
    out = join(dataDir, "bundle.json");
    const env = {
      ...process.env,
      MONGODB_URI: mongoUri,
      DATA_DIR: dataDir,
      LEASE_TTL_MS: String(TTL_MS),
      LEASE_HEARTBEAT_MS: String(HEARTBEAT_MS),
      RECOVERY_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
      TIMER_POLL_MS: "100",
      // kill-after-accept needs a first node with effects (a built-in first node is pure: stored with its run).
      HANDLERS_MODULE: join(import.meta.dirname, "..", "fixtures", "durability-handlers.ts"),
      WORKFLOWS_DIR: join(import.meta.dirname, "..", "fixtures", "durability-workflows"),
      EFFECTS_COLLECTION: "evidence_effects",
    };
    bundle = await runEvidence({
      out,
      instances: 3,
      build: "commit:0123456789abcdef",
      acceptSkill: "effect",
      command: { file: process.execPath, args: ["--import", "tsx", HOST_MAIN] },
      env,
      log: (line) => lines.push(line),
    });
    // The host the bundle is about, started afterwards on the same data directory: it publishes the same key.
    host = await startServerProcess({
      MONGODB_URI: mongoUri,
      MONGODB_DB: `evidence_${randomUUID().slice(0, 8)}`,
      DATA_DIR: dataDir,
    });
    discovery = (await (await fetch(`${host.baseUrl}/.well-known/openwop`)).json()) as Record<string, unknown>;
  }, 300_000);
  afterAll(async () => {
    console.info(`evidence run:\n  ${lines.join("\n  ")}`);
    await host?.kill();
  });

  it("witnesses every exercised row under real SIGKILLs, derives durable-multi-instance, and writes what it returns", async () => {
    expect(JSON.parse(await readFile(out, "utf8"))).toEqual(bundle);
    const result = (scenario: string) => bundle.results.requirements.find((r) => r.id === rowId(scenario));
    for (const scenario of [
      "bound-is-derived",
      "kill-after-accept",
      "kill-during-execution",
      "peer-resume",
      "duplicate-delivery",
      "poison-exhaustion",
    ])
      expect(result(scenario)?.result, `${scenario}: ${result(scenario)?.detail}`).toBe("executed-pass");
    expect(bundle.results.totals).toEqual({
      executedPass: 6,
      executedFail: 0,
      skipped: 0,
      inapplicable: 0,
      blocked: 0,
    });
    expect(bundle.detail).toBeUndefined();
    // The bound is the lease settings' sum, and each kill row was judged against it.
    expect(result("bound-is-derived")?.evidence?.recoveryBounds).toEqual([
      {
        class: "task-execution-lease",
        bound: TTL_MS + HEARTBEAT_MS,
        terms: [
          { name: "leaseTtlMs", ms: TTL_MS },
          { name: "leaseHeartbeatMs", ms: HEARTBEAT_MS },
        ],
      },
    ]);
    for (const kill of ["kill-after-accept", "kill-during-execution"]) {
      const recovery = result(kill)?.evidence?.recovery;
      expect(recovery).toMatchObject({ class: "task-execution-lease", boundMs: TTL_MS + HEARTBEAT_MS });
      expect(recovery!.observedMs).toBeLessThanOrEqual(TTL_MS + HEARTBEAT_MS);
    }
    const tokens = /accepted-by=(\S+) resumed-by=(\S+) survivors-answered=(\d+)\/(\d+)/.exec(
      result("peer-resume")!.detail!,
    );
    expect(tokens?.[1]).not.toBe(tokens?.[2]);
    expect(tokens?.[3]).toBe(tokens?.[4]);
    // The rows witness multi-instance; the claim is what the bundle schema's revision can carry.
    expect(bundle.durability).toEqual({ rung: "durable-single-instance" });
    expect(bundle.host.build).toEqual({ kind: "commit", id: "0123456789abcdef" });
    expect(bundle.signature?.over).toEqual(["witnessSha256", "host.build", "suite.version", "discovery.sha256"]);
    expect(lines.some((l) => l.startsWith("kill-during-execution: a peer resumed"))).toBe(true);
  });

  it("poison-exhaustion: the node ran once uncharged, then RECOVERY_MAX_ATTEMPTS times alone, each in its own process, and the next start failed the run and stayed up", () => {
    const poison =
      /^attempts=(\d+) \(RECOVERY_MAX_ATTEMPTS (\d+)\) died=(\S+) failed-by=(\S+) error=poison_exhausted survivors-answered=2\/2 other-run=completed$/.exec(
        bundle.results.requirements.find((r) => r.id === rowId("poison-exhaustion"))!.detail!,
      );
    // The discovery attemptBound declares maxExecutions: the first death, not run alone, is not charged.
    expect(poison?.[1]).toBe(String(MAX_ATTEMPTS + 1));
    expect(poison?.[2]).toBe(String(MAX_ATTEMPTS));
    const died = poison![3]!.split(",");
    expect(new Set([...died, poison![4]]).size).toBe(MAX_ATTEMPTS + 2);
    for (const token of [...died, poison![4]]) expect(token).toMatch(/^boot-[A-Za-z0-9_-]+$/);
    expect(lines).toContain(
      `poison-exhaustion: the node ran ${MAX_ATTEMPTS + 1} times, each in a process it killed; the next start failed the run`,
    );
  });

  it("the host lists the key in discovery signingKeys[], and `evidence verify` accepts the bundle against it", async () => {
    expect(discovery["signingKeys"]).toEqual([
      expect.objectContaining({ keyId: bundle.signature!.keyId, alg: "ed25519", use: "certification-bundle" }),
    ]);
    const verdict = await verifyCommand(out, `${host.baseUrl}/.well-known/openwop`);
    expect(verdict.text).toContain(`verified: signed by "${bundle.signature!.keyId}"`);
    expect(verdict.text).toContain("rung witnessed: durable-multi-instance");
    expect(verdict.code).toBe(0);
  });

  it("refuses a tampered row, a tampered attested field and a missing signature", async () => {
    const row = clone(bundle);
    row.results.requirements.find((r) => r.id === rowId("kill-during-execution"))!.evidence!.recovery!.observedMs = 1;
    expect(verifyBundle(row, discovery).problems).toContain(
      "witnessSha256 does not match the results: rows, evidence or totals were changed after signing",
    );
    const build = clone(bundle);
    build.host.build.id = "fedcba9876543210";
    expect(verifyBundle(build, discovery).problems).toEqual([
      `the attestation does not verify under the published key "${bundle.signature!.keyId}"`,
    ]);
    const unsigned = clone(bundle);
    delete unsigned.signature;
    const file = join(dataDir, "unsigned.json");
    await writeFile(file, JSON.stringify(unsigned));
    const verdict = await verifyCommand(file, `${host.baseUrl}/.well-known/openwop`);
    expect(verdict.code).toBe(1);
    expect(verdict.text).toContain("the bundle is unsigned (no `signature`): an unsigned bundle attests nothing");
  });

  it("refuses a key that is not published, a wrong key under the published id, and no discovery document", async () => {
    const other = await loadEvidenceKey({
      dataDir: await mkdtemp(join(tmpdir(), "evidence-other-")),
      production: false,
    });
    const foreign = clone(bundle);
    foreign.signature = { ...foreign.signature!, keyId: other!.keyId, sig: other!.sign(attestationInput(foreign)) };
    expect(verifyBundle(foreign, discovery).problems[0]).toMatch(/^signature\.keyId "evidence-.*" is not published/);
    // The right key id, signed by another key: the attestation does not verify under the published one.
    const wrong = clone(bundle);
    wrong.signature = { ...wrong.signature!, sig: other!.sign(attestationInput(wrong)) };
    expect(verifyBundle(wrong, discovery).problems).toEqual([
      `the attestation does not verify under the published key "${bundle.signature!.keyId}"`,
    ]);
    expect(verifyBundle(bundle, undefined).problems[0]).toMatch(/^no discovery document was read/);
    const gone = await verifyCommand(out, join(dataDir, "missing.json"));
    expect(gone.code).toBe(1);
    expect(gone.text).toMatch(/missing\.json could not be read/);
  });

  /** The bundle re-signed with the host's own key after a change: only the rung re-derivation can refuse it. */
  async function resigned(b: EvidenceBundle): Promise<EvidenceBundle> {
    const key = (await loadEvidenceKey({ dataDir, production: false }))!;
    b.results.totals = tally(b.results.requirements);
    b.witnessSha256 = sha256(witnessInput(b));
    b.signature = { ...b.signature!, sig: key.sign(attestationInput(b)) };
    return b;
  }

  it("refuses a bundle with a blocked total and a rung its rows do not derive, even when correctly signed", async () => {
    const blocked = clone(bundle);
    blocked.results.requirements.find((r) => r.id === rowId("duplicate-delivery"))!.result = "blocked";
    delete blocked.durability;
    expect(verifyBundle(await resigned(blocked), discovery).problems).toEqual([
      "results.totals.blocked is 1: a bundle with a blocked row does not certify",
    ]);
    const lonely = clone(bundle);
    lonely.results.requirements.find((r) => r.id === rowId("peer-resume"))!.detail = "accepted-by=a resumed-by=a";
    lonely.durability = { rung: "durable-multi-instance" };
    const problems = verifyBundle(await resigned(lonely), discovery).problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^rung-not-derivable: the bundle claims durable-multi-instance, the signed rows support durable-single-instance/,
    );
    // Rows that do witness it still cannot carry a multi-instance claim in this schema revision.
    const beyond = clone(bundle);
    beyond.durability = { rung: "durable-multi-instance" };
    const refused = verifyBundle(await resigned(beyond), discovery);
    expect(refused.problems).toEqual([
      "rung-not-derivable: the bundle claims durable-multi-instance, which the bundle schema's revision cannot carry (it derives durable-single-instance at most)",
    ]);
    expect(refused.rung).toBe("durable-multi-instance");
  });

  it("refuses any rung when the poison-exhaustion row is missing or failed, even when correctly signed", async () => {
    const poison = rowId("poison-exhaustion");
    const missing = clone(bundle);
    missing.results.requirements = missing.results.requirements.filter((r) => r.id !== poison);
    const gone = verifyBundle(await resigned(missing), discovery);
    expect(gone.problems).toEqual([
      `rung-not-derivable: the bundle claims durable-single-instance, the signed rows support no rung (${poison} is missing; the rung needs it passed)`,
    ]);
    expect(gone.rung).toBeUndefined();
    const failed = clone(bundle);
    Object.assign(
      failed.results.requirements.find((r) => r.id === poison)!,
      {
        result: "executed-fail",
        detail: "the start after death 3 died too",
      },
    );
    failed.durability = { rung: "durable-single-instance" };
    const file = join(dataDir, "poison-failed.json");
    await writeFile(file, JSON.stringify(await resigned(failed)));
    const verdict = await verifyCommand(file, `${host.baseUrl}/.well-known/openwop`);
    expect(verdict.code).toBe(1);
    expect(verdict.text).toContain(
      `rung-not-derivable: the bundle claims durable-single-instance, the signed rows support no rung (${poison} is executed-fail; the rung needs it passed)`,
    );
  });
});
