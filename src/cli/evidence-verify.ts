import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { canonicalJson } from "../domain/canonical-json.js";
import {
  ATTESTED_MEMBERS,
  attestationInput,
  claimableRung,
  deriveRung,
  tally,
  witnessInput,
  type DurabilityRung,
  type EvidenceBundle,
  type SigningKeyListing,
} from "../domain/evidence-bundle.js";
import { verifyEd25519 } from "../secrets/evidence-key.js";

// The verifier of certification bundles v3 (spec/v2/core/conformance.md "Bundle v3" at openwop/openwop commit
// 0a17e2a5a88400bdef0a3ec4c929a562f3430377). It resolves `signature.keyId` in the discovery document of the host
// the bundle is about (or one given), and keeps apart what a presence check would merge: no discovery document
// read, a key that is not published, and an attestation that does not verify.

export interface Verdict {
  ok: boolean;
  /** Why the bundle is refused, one sentence each; empty when it verifies. */
  problems: string[];
  /** The rung the signed rows witness (re-derived, never read from the claim). */
  rung?: DurabilityRung;
  keyId?: string;
}

const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Checks `bundle` against the keys `discovery` publishes (`undefined`: no document could be read). */
export function verifyBundle(bundle: unknown, discovery: Record<string, unknown> | undefined): Verdict {
  const shape = shapeProblem(bundle);
  if (shape) return { ok: false, problems: [shape] };
  const b = bundle as EvidenceBundle;
  const sig = b.signature;
  if (!sig)
    return { ok: false, problems: ["the bundle is unsigned (no `signature`): an unsigned bundle attests nothing"] };
  const problems: string[] = [];
  if (sig.alg !== "ed25519") problems.push(`signature.alg is "${String(sig.alg)}"; bundle v3 is signed with ed25519`);
  if (canonicalJson(sig.over) !== canonicalJson(ATTESTED_MEMBERS))
    problems.push(`signature.over must list exactly ${ATTESTED_MEMBERS.join(", ")} (got ${JSON.stringify(sig.over)})`);
  if (typeof sig.sig !== "string" || !/^[A-Za-z0-9_-]{86}$/.test(sig.sig))
    problems.push("signature.sig is not a base64url Ed25519 signature (86 characters)");
  if (sha256(witnessInput(b)) !== b.witnessSha256)
    problems.push("witnessSha256 does not match the results: rows, evidence or totals were changed after signing");
  if (canonicalJson(tally(b.results.requirements)) !== canonicalJson(b.results.totals))
    problems.push("results.totals do not tally results.requirements");
  if (b.discovery.document !== undefined && sha256(canonicalJson(b.discovery.document)) !== b.discovery.sha256)
    problems.push("discovery.document does not hash to discovery.sha256");

  if (!discovery) {
    problems.push(
      `no discovery document was read, so signature.keyId "${sig.keyId}" cannot be resolved: the signature would attest integrity only`,
    );
  } else {
    const keys = Array.isArray(discovery["signingKeys"]) ? (discovery["signingKeys"] as SigningKeyListing[]) : [];
    const key = keys.find((k) => isObject(k) && k.keyId === sig.keyId);
    if (!key)
      problems.push(
        `signature.keyId "${sig.keyId}" is not published in the discovery document's signingKeys[] (${keys.map((k) => k.keyId).join(", ") || "none listed"})`,
      );
    else if (key.alg !== "ed25519" || !verifyEd25519(key.publicKey, attestationInput(b), sig.sig))
      problems.push(`the attestation does not verify under the published key "${sig.keyId}"`);
  }
  if (b.results.totals.blocked > 0)
    problems.push(
      `results.totals.blocked is ${b.results.totals.blocked}: a bundle with a blocked row does not certify`,
    );
  const derived = deriveRung(b.results.requirements);
  if (b.durability) {
    const order: DurabilityRung[] = ["durable-single-instance", "durable-multi-instance", "multi-region-qualified"];
    if (!derived.rung || order.indexOf(b.durability.rung) > order.indexOf(derived.rung))
      problems.push(
        `rung-not-derivable: the bundle claims ${b.durability.rung}, the signed rows support ${derived.rung ?? "no rung"} (${derived.problems.join("; ")})`,
      );
    else if (b.durability.rung !== claimableRung(b.durability.rung))
      problems.push(
        `rung-not-derivable: the bundle claims ${b.durability.rung}, which the bundle schema's revision cannot carry (it derives durable-single-instance at most)`,
      );
  }
  return { ok: problems.length === 0, problems, ...(derived.rung ? { rung: derived.rung } : {}), keyId: sig.keyId };
}

/** The first structural fault that makes the bundle unreadable as v3, if any. */
function shapeProblem(bundle: unknown): string | undefined {
  if (!isObject(bundle)) return "the file is not a JSON object";
  if (bundle["bundleVersion"] !== "3")
    return `bundleVersion is ${JSON.stringify(bundle["bundleVersion"])}; this verifier reads bundle v3`;
  const host = bundle["host"];
  const suite = bundle["suite"];
  const disc = bundle["discovery"];
  const results = bundle["results"];
  if (!isObject(host) || !isObject(host["build"])) return "host.build is missing";
  if (!isObject(suite) || typeof suite["version"] !== "string") return "suite.version is missing";
  if (!isObject(disc) || typeof disc["sha256"] !== "string" || typeof disc["url"] !== "string")
    return "discovery.url or discovery.sha256 is missing";
  if (!isObject(results) || !isObject(results["totals"]) || !Array.isArray(results["requirements"]))
    return "results.totals or results.requirements is missing";
  if (typeof bundle["witnessSha256"] !== "string" || !/^[0-9a-f]{64}$/.test(bundle["witnessSha256"]))
    return "witnessSha256 is missing or not a SHA-256 hex digest";
  if (bundle["signature"] !== undefined && !isObject(bundle["signature"])) return "signature is not an object";
  return undefined;
}

/** A discovery document from a file path or an http(s) URL; `undefined` (and why) when none could be read. */
export async function readDiscovery(source: string): Promise<{ document?: Record<string, unknown>; problem?: string }> {
  try {
    const text = /^https?:\/\//.test(source)
      ? await fetch(source, { headers: { accept: "application/json" } }).then(async (res) => {
          if (!res.ok) throw new Error(`HTTP ${res.status}`);
          return res.text();
        })
      : await readFile(source, "utf8");
    const parsed = JSON.parse(text) as unknown;
    return isObject(parsed) ? { document: parsed } : { problem: `${source} is not a JSON object` };
  } catch (err) {
    return { problem: `${source} could not be read: ${(err as Error).message}` };
  }
}

/** `evidence verify <file> [--discovery <url|file>]`: the verdict on stdout, exit 0 (verifies) or 1 (refused). */
export async function verifyCommand(
  file: string,
  discoverySource: string | undefined,
): Promise<{ code: number; text: string }> {
  let bundle: unknown;
  try {
    bundle = JSON.parse(await readFile(file, "utf8"));
  } catch (err) {
    return { code: 1, text: `refused: ${file} could not be read as JSON (${(err as Error).message})\n` };
  }
  const source =
    discoverySource ?? (isObject(bundle) && isObject(bundle["discovery"]) ? bundle["discovery"]["url"] : undefined);
  const read =
    typeof source === "string" ? await readDiscovery(source) : { problem: "the bundle names no discovery.url" };
  const verdict = verifyBundle(bundle, read.document);
  if (verdict.ok)
    return {
      code: 0,
      text: `verified: signed by "${verdict.keyId}", published at ${String(source)}; rung witnessed: ${verdict.rung ?? "none"}\n`,
    };
  const lines = [...(read.problem ? [read.problem] : []), ...verdict.problems];
  return { code: 1, text: `refused:\n${lines.map((l) => `  - ${l}`).join("\n")}\n` };
}
