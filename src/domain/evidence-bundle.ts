import { canonicalJson } from "./canonical-json.js";

// OpenWOP certification bundle v3 (spec/v2/core/conformance.md "Bundle v3", read at openwop/openwop commit
// 0a17e2a5a88400bdef0a3ec4c929a562f3430377; schemas/v2/certification-bundle.schema.json at 0b577834da7ab351eb2e9aff20c594e4031476a8)
// and the recovery rows of RFC 0158 (RFCS/0158-durable-execution-and-disaster-recovery-qualification.md at
// 1a06f6f3c070c043a959f82ed3e91e22d26c658e). Pure: no I/O, no keys; the signing is secrets/evidence-key.ts.

export type RowResult = "executed-pass" | "executed-fail" | "skipped" | "inapplicable" | "blocked";
export type DurabilityRung = "durable-single-instance" | "durable-multi-instance" | "multi-region-qualified";

export interface RecoveryBound {
  class: string;
  bound: number;
  terms: Array<{ name: string; ms: number }>;
}

export interface RequirementRow {
  id: string;
  scenario: string;
  result: RowResult;
  assertions?: number;
  detail?: string;
  evidence?: {
    recovery?: { class: string; boundMs: number; observedMs: number };
    recoveryBounds?: RecoveryBound[];
  };
}

export interface Totals {
  executedPass: number;
  executedFail: number;
  skipped: number;
  inapplicable: number;
  blocked: number;
}

export interface BundleSignature {
  alg: "ed25519";
  keyId: string;
  sig: string;
  over: string[];
}

export interface EvidenceBundle {
  bundleVersion: "3";
  generatedAt: string;
  suite: { name: string; version: string; targetMajor: 1 | 2; specArtifactsVersion: string };
  host: { name: string; version: string; build: { kind: "image-digest" | "commit" | "artifact-sha256"; id: string } };
  discovery: {
    url: string;
    sha256: string;
    protocolVersions: string[];
    preferredVersion: string;
    document?: Record<string, unknown>;
  };
  claimedProfiles: Array<{
    id: string;
    evidenceTier: "self" | "steward" | "independent";
    witnessCount: number;
    certified: boolean;
  }>;
  results: { totals: Totals; requirements: RequirementRow[] };
  witnessSha256: string;
  assertionCount: number;
  detail?: { nonPass: Array<{ id: string; result: string; reason: string }> };
  durability?: { rung: DurabilityRung };
  signature?: BundleSignature;
}

/**
 * One entry of the discovery document's `signingKeys[]` (v2 capabilities.schema.json at 046ac537f727c15cbf55df8d86f6fe33f6e63900,
 * RFC 0168 §E.2): where a verifier resolves a bundle's `signature.keyId`.
 */
export interface SigningKeyListing {
  keyId: string;
  alg: "ed25519";
  /** The Ed25519 public key, base64url without padding (32 bytes). */
  publicKey: string;
  use: "certification-bundle";
  retiredAt?: string;
}

/**
 * The discovery member listing the evidence keys, for the v1 document and the v2 root alike: `{signingKeys}`
 * with every key (a retired one stays listed so the bundles it signed still verify), or nothing without keys.
 */
export function signingKeysMember(keys: readonly SigningKeyListing[]): { signingKeys?: SigningKeyListing[] } {
  return keys.length > 0 ? { signingKeys: keys.map((k) => ({ ...k })) } : {};
}

/** The members the attestation covers, in the order `signature.over` must list them (conformance.md). */
export const ATTESTED_MEMBERS = ["witnessSha256", "host.build", "suite.version", "discovery.sha256"] as const;

/** The rows of RFC 0158's recovery scenarios, by scenario name (their ids are `openwop.requirement.0158.<name>`). */
export const RECOVERY_ROWS = {
  boundIsDerived: "bound-is-derived",
  killAfterAccept: "kill-after-accept",
  killDuringExecution: "kill-during-execution",
  peerResume: "peer-resume",
  duplicateDelivery: "duplicate-delivery",
  poisonExhaustion: "poison-exhaustion",
} as const;

export const rowId = (scenario: string): string => `openwop.requirement.0158.${scenario}`;

/**
 * What the Ed25519 signature is made over: the canonical JSON (keys sorted at every level) of the bundle
 * projected onto the four members the spec names, each at its own path (`{discovery: {sha256}, host: {build},
 * suite: {version}, witnessSha256}`). Nothing else in the bundle is covered directly; the rows are covered
 * through `witnessSha256`.
 */
export function attestationInput(
  bundle: Pick<EvidenceBundle, "witnessSha256" | "host" | "suite" | "discovery">,
): string {
  return canonicalJson({
    witnessSha256: bundle.witnessSha256,
    host: { build: bundle.host.build },
    suite: { version: bundle.suite.version },
    discovery: { sha256: bundle.discovery.sha256 },
  });
}

/**
 * What `witnessSha256` digests (the reporter record): the canonical JSON of `results` (the rows, their
 * evidence, and the totals) and `assertionCount`. The rows' evidence is signed because this digest is.
 */
export function witnessInput(bundle: Pick<EvidenceBundle, "results" | "assertionCount">): string {
  return canonicalJson({ results: bundle.results, assertionCount: bundle.assertionCount });
}

/** `results.totals`: the rows tallied. */
export function tally(rows: readonly RequirementRow[]): Totals {
  const totals: Totals = { executedPass: 0, executedFail: 0, skipped: 0, inapplicable: 0, blocked: 0 };
  const key: Record<RowResult, keyof Totals> = {
    "executed-pass": "executedPass",
    "executed-fail": "executedFail",
    skipped: "skipped",
    inapplicable: "inapplicable",
    blocked: "blocked",
  };
  for (const row of rows) totals[key[row.result]]++;
  return totals;
}

/** `detail.nonPass[]`: every row that is not `executed-pass`, with its reason (the row's detail). */
export function nonPass(rows: readonly RequirementRow[]): Array<{ id: string; result: string; reason: string }> {
  return rows
    .filter((r) => r.result !== "executed-pass")
    .map((r) => ({ id: r.id, result: r.result, reason: r.detail ?? "" }));
}

/** The per-boot incarnation tokens a `peer-resume` row names in its detail: `accepted-by=<token> resumed-by=<token>`. */
export function peerResumeTokens(detail: string | undefined): { acceptedBy: string; resumedBy: string } | undefined {
  const match = /(?:^|\s)accepted-by=([A-Za-z0-9._-]+)\s+resumed-by=([A-Za-z0-9._-]+)(?:\s|$)/.exec(detail ?? "");
  return match ? { acceptedBy: match[1]!, resumedBy: match[2]! } : undefined;
}

/**
 * The rungs a bundle may claim: those a verifier written to certification-bundle.schema.json at 0b577834 can
 * re-derive. Its `durability` note says only `durable-single-instance` is derivable in that revision (peer-resume
 * evidence has no seat in a row yet) and a higher claim is refused, so a bundle claiming more would not certify.
 */
const CLAIMABLE_RUNGS: readonly DurabilityRung[] = ["durable-single-instance"];
const RUNG_ORDER: readonly DurabilityRung[] = [
  "durable-single-instance",
  "durable-multi-instance",
  "multi-region-qualified",
];

/** The highest claimable rung at or below `derived`. */
export function claimableRung(derived: DurabilityRung | undefined): DurabilityRung | undefined {
  if (derived === undefined) return undefined;
  return CLAIMABLE_RUNGS.filter((r) => RUNG_ORDER.indexOf(r) <= RUNG_ORDER.indexOf(derived)).at(-1);
}

/**
 * The rows RFC 0158 names for `durable-single-instance` (its acceptance criteria: `kill-after-accept`,
 * `kill-during-execution`, `duplicate-delivery`, `poison-exhaustion` and `bound-is-derived`); the schema's
 * `durability` note asks every row of the rung to be `executed-pass`.
 */
export const SINGLE_INSTANCE_ROWS = [
  RECOVERY_ROWS.boundIsDerived,
  RECOVERY_ROWS.killAfterAccept,
  RECOVERY_ROWS.killDuringExecution,
  RECOVERY_ROWS.duplicateDelivery,
  RECOVERY_ROWS.poisonExhaustion,
] as const;

/**
 * The highest rung the rows witness, or why none (RFC 0158 §D, and the schema's re-derivation rule):
 * - every row of SINGLE_INSTANCE_ROWS is present and `executed-pass`;
 * - the `bound-is-derived` row carries recoveryBounds[], and each of its bounds equals the sum of its terms;
 * - the two kill rows each name a declared class whose bound equals their `boundMs`, and resumed within it;
 * - `durable-multi-instance` also needs `peer-resume` passed, naming two different incarnation tokens (the
 *   process that accepted the work and the one that resumed it).
 * `multi-region-qualified` (a restore and a region evacuation) is never derived here: this host has no such exercise.
 */
export function deriveRung(rows: readonly RequirementRow[]): { rung?: DurabilityRung; problems: string[] } {
  const problems: string[] = [];
  const row = (name: string) => rows.find((r) => r.id === rowId(name));
  const passed = (name: string) => (row(name)?.result === "executed-pass" ? row(name) : undefined);
  for (const name of SINGLE_INSTANCE_ROWS) {
    const required = row(name);
    if (required?.result !== "executed-pass")
      problems.push(`${rowId(name)} ${required ? `is ${required.result}` : "is missing"}; the rung needs it passed`);
  }
  const bounds = passed(RECOVERY_ROWS.boundIsDerived);
  const declared = bounds?.evidence?.recoveryBounds ?? [];
  if (bounds && declared.length === 0)
    problems.push(`${rowId(RECOVERY_ROWS.boundIsDerived)} carries no evidence.recoveryBounds[]`);
  for (const b of declared) {
    const sum = b.terms.reduce((total, t) => total + t.ms, 0);
    if (sum !== b.bound)
      problems.push(`recovery class "${b.class}" declares ${b.bound} ms but its terms sum to ${sum} ms`);
  }
  for (const name of [RECOVERY_ROWS.killAfterAccept, RECOVERY_ROWS.killDuringExecution]) {
    const kill = passed(name);
    if (!kill) continue;
    const recovery = kill.evidence?.recovery;
    if (!recovery) {
      problems.push(`${rowId(name)} carries no evidence.recovery`);
      continue;
    }
    const cls = declared.find((b) => b.class === recovery.class);
    if (!cls) problems.push(`${rowId(name)} names recovery class "${recovery.class}", which no bound declares`);
    else if (cls.bound !== recovery.boundMs)
      problems.push(
        `${rowId(name)} was judged against ${recovery.boundMs} ms, but class "${cls.class}" declares ${cls.bound} ms`,
      );
    if (recovery.observedMs > recovery.boundMs)
      problems.push(`${rowId(name)} resumed after ${recovery.observedMs} ms, beyond its ${recovery.boundMs} ms bound`);
  }
  if (problems.length > 0) return { problems };
  const peer = row(RECOVERY_ROWS.peerResume);
  const tokens = peer?.result === "executed-pass" ? peerResumeTokens(peer.detail) : undefined;
  if (!tokens || tokens.acceptedBy === tokens.resumedBy)
    return {
      rung: "durable-single-instance",
      problems: [`${rowId(RECOVERY_ROWS.peerResume)} does not show a different process resuming`],
    };
  return { rung: "durable-multi-instance", problems: [] };
}
