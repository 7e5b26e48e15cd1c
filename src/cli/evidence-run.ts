import { createHash, randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { canonicalJson } from "../domain/canonical-json.js";
import {
  ATTESTED_MEMBERS,
  attestationInput,
  claimableRung,
  deriveRung,
  nonPass,
  tally,
  witnessInput,
  type EvidenceBundle,
  type RequirementRow,
} from "../domain/evidence-bundle.js";
import { packageVersion } from "../domain/package-version.js";
import { loadEvidenceKey, type EvidenceKey } from "../secrets/evidence-key.js";
import { SecretValue } from "../secrets/secret-value.js";
import { killInstance, startInstance, type HostCommand, type Instance } from "./evidence-instances.js";
import { poisonExhaustion } from "./evidence-poison.js";
import { boundIsDerived, killAfterAccept, killDuringExecution, type Witness } from "./evidence-scenarios.js";

export interface EvidenceRunOptions {
  /** Where the bundle is written. */
  out: string;
  /** Host processes started on the deployment's store (at least 2; 3 by default). */
  instances?: number;
  /** What was deployed: `commit:<sha>`, `image-digest:<digest>` or `artifact-sha256:<hex>`; default: the entry file's SHA-256. */
  build?: string;
  /** The discovery URL the bundle is about (the deployment's public one); default: the first witness instance's. */
  discoveryUrl?: string;
  /** A skill whose first node has effects (its node.started is a write of its own): kill-after-accept holds that write. */
  acceptSkill?: string;
  /** A caller's API key, when the deployment requires one. */
  apiKey?: string;
  /** How to start one host process; default: this CLI (same node, same entry). */
  command?: HostCommand;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

const sha256 = (text: string | Buffer): string => createHash("sha256").update(text).digest("hex");

/** The key the deployment's instances list: EVIDENCE_SIGNING_KEY (or its _FILE), else the one under DATA_DIR. */
async function evidenceKeyOf(env: NodeJS.ProcessEnv): Promise<EvidenceKey | undefined> {
  const file = env["EVIDENCE_SIGNING_KEY_FILE"];
  const configured =
    env["EVIDENCE_SIGNING_KEY"] ?? (file ? (await readFile(file, "utf8")).replace(/[\r\n]+$/, "") : undefined);
  return loadEvidenceKey({
    ...(configured ? { configured: new SecretValue(configured) } : {}),
    dataDir: resolve(env["DATA_DIR"] ?? "data"),
    production: env["NODE_ENV"] === "production",
  });
}

function buildOf(
  spec: string | undefined,
  entry: string,
): Promise<EvidenceBundle["host"]["build"]> | EvidenceBundle["host"]["build"] {
  if (spec) {
    const at = spec.indexOf(":");
    const kind = spec.slice(0, at);
    if (at > 0 && (kind === "commit" || kind === "image-digest" || kind === "artifact-sha256"))
      return { kind, id: spec.slice(at + 1) };
    throw new Error(`--build must be commit:<sha>, image-digest:<digest> or artifact-sha256:<hex> (got "${spec}")`);
  }
  return readFile(entry).then((bytes) => ({ kind: "artifact-sha256" as const, id: sha256(bytes) }));
}

/**
 * `evidence run`: starts the instances itself (a SIGKILL needs control of the processes) on the deployment's
 * MongoDB (MONGODB_URI, a database of its own), runs the RFC 0158 witness scenarios, and writes a bundle v3
 * signed with the deployment's evidence key. Answers the bundle; throws with a sentence on a precondition.
 */
export async function runEvidence(options: EvidenceRunOptions): Promise<EvidenceBundle> {
  const env = { ...(options.env ?? process.env) };
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  if (!env["MONGODB_URI"] && !env["MONGODB_URI_FILE"])
    throw new Error(
      "evidence run needs MONGODB_URI: the witness instances must share one store, as the deployment's do",
    );
  const count = options.instances ?? 3;
  if (!Number.isInteger(count) || count < 2)
    throw new Error("--instances must be at least 2: peer-resume needs a live peer when the kill lands");
  const key = await evidenceKeyOf(env);
  if (!key)
    throw new Error("no evidence key: set EVIDENCE_SIGNING_KEY (production lists and signs with no generated key)");
  const command = options.command ?? { file: process.execPath, args: [...process.execArgv, process.argv[1]!] };
  const build = await buildOf(options.build, command.args.at(-1)!);
  // The witness's own database on the deployment's server, and only the host's conformance workflows.
  const witnessEnv: NodeJS.ProcessEnv = {
    ...env,
    MONGODB_DB: `openwop_evidence_${randomBytes(4).toString("hex")}`,
    BUILTIN_WORKFLOWS: env["BUILTIN_WORKFLOWS"] ? `${env["BUILTIN_WORKFLOWS"]},conformance` : "conformance",
  };
  const instances: Instance[] = [];
  try {
    for (let i = 0; i < count; i++) instances.push(await startInstance(command, witnessEnv));
    log(`evidence: ${count} instances on database ${witnessEnv["MONGODB_DB"]}`);
    const w: Witness = {
      command,
      env: witnessEnv,
      instances: [...instances],
      headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
      log,
    };
    const derived = await boundIsDerived(w);
    const rows: RequirementRow[] = [derived.row];
    if (derived.bound) {
      rows.push(...(await killAfterAccept(w, derived.bound, options.acceptSkill)));
      rows.push(...(await killDuringExecution(w, derived.bound)));
      rows.push(await poisonExhaustion(w, derived.bound));
    }
    const discoveryUrl = options.discoveryUrl ?? `${instances[1]!.baseUrl}/.well-known/openwop`;
    const document = (await (await fetch(discoveryUrl, { headers: w.headers })).json()) as Record<string, unknown>;
    const listed = Array.isArray(document["signingKeys"]) ? (document["signingKeys"] as Array<{ keyId?: string }>) : [];
    if (!listed.some((k) => k.keyId === key.keyId))
      throw new Error(
        `${discoveryUrl} does not list the evidence key "${key.keyId}" in signingKeys[]; a bundle signed with it would not be attributable`,
      );
    const bundle = assemble(rows, { build, discoveryUrl, document });
    bundle.signature = {
      alg: "ed25519",
      keyId: key.keyId,
      sig: key.sign(attestationInput(bundle)),
      over: [...ATTESTED_MEMBERS],
    };
    await writeFile(options.out, `${JSON.stringify(bundle, null, 2)}\n`);
    return bundle;
  } finally {
    for (const instance of instances) await killInstance(instance);
  }
}

/** The unsigned bundle around the rows: totals, witness digest, and the rung the rows derive (if any). */
function assemble(
  rows: RequirementRow[],
  about: { build: EvidenceBundle["host"]["build"]; discoveryUrl: string; document: Record<string, unknown> },
): EvidenceBundle {
  const results = { totals: tally(rows), requirements: rows };
  const assertionCount = Math.max(
    1,
    rows.reduce((n, r) => n + (r.assertions ?? 0), 0),
  );
  const failing = nonPass(rows);
  // The claim is what the rows derive, capped at what a verifier of the schema revision read can re-derive; the
  // peer-resume row still witnesses the next rung in the signed rows.
  const claim = claimableRung(deriveRung(rows).rung);
  const versions = about.document["protocolVersions"];
  return {
    bundleVersion: "3",
    generatedAt: new Date().toISOString(),
    // The witness is this host's own command, not the OpenWOP suite package; the name is the schema's constant.
    suite: {
      name: "@openwop/openwop-conformance",
      version: `openwop-a2a-host-evidence@${packageVersion}`,
      targetMajor: 1,
      specArtifactsVersion: "2.34.0",
    },
    host: { name: "openwop-a2a-host", version: packageVersion, build: about.build },
    discovery: {
      url: about.discoveryUrl,
      sha256: sha256(canonicalJson(about.document)),
      protocolVersions: Array.isArray(versions)
        ? (versions as string[])
        : [String(about.document["protocolVersion"] ?? "1.0")],
      preferredVersion: String(about.document["preferredVersion"] ?? about.document["protocolVersion"] ?? "1.0"),
      document: about.document,
    },
    claimedProfiles: [],
    results,
    witnessSha256: sha256(witnessInput({ results, assertionCount })),
    assertionCount,
    ...(failing.length > 0 ? { detail: { nonPass: failing } } : {}),
    ...(claim ? { durability: { rung: claim } } : {}),
  };
}
