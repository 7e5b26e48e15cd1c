import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { RECOVERY_ROWS, type RecoveryBound, type RequirementRow } from "../domain/evidence-bundle.js";
import { killInstance, startInstance, type Instance } from "./evidence-instances.js";
import { POISON_HANDLER, type PoisonLedgerLine } from "./evidence-poison-handlers.js";
import { events, getJson, notPass, pass, startRun, until, type RunEvent, type Witness } from "./evidence-scenarios.js";

// OpenWOP RFC 0158 `durability/poison-exhaustion` (§C.8, at openwop/openwop commit
// 1a06f6f3c070c043a959f82ed3e91e22d26c658e): "deterministic failure reaches a terminal operator-visible state
// within the attempt bound". The witness gives instances of its own a workflow whose one node kills its own
// process (evidence-poison-handlers.ts), and restarts an instance each time one dies, as a restart supervisor
// would, until the deployment's declared attempt bound (discovery `recoveryEvidence.attemptBound.maxAttempts`,
// from RECOVERY_MAX_ATTEMPTS) is spent. Then the next instance must fail the run (`poison_exhausted`) instead
// of running the node again, and stay up, and so must a peer, with no one taking the run up again.

const WORKFLOW_ID = "evidence-poison";
const NODE_ID = "crash";

/** The handlers module beside this file, in the form this process runs (`.ts` under tsx, `.js` once built). */
const HANDLERS_FILE = fileURLToPath(
  new URL(`./evidence-poison-handlers${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

interface RunSnapshot {
  status?: string;
  error?: { code?: string; details?: { nodeId?: string } };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const alive = (i: Instance) => i.child.exitCode === null && i.child.signalCode === null;
const healthy = (i: Instance) =>
  fetch(`${i.baseUrl}/healthz`).then(
    (r) => r.ok,
    () => false,
  );
/** Whether the instance dies within `ms`. */
const diesWithin = (i: Instance, ms: number) => Promise.race([i.exited.then(() => true), sleep(ms).then(() => false)]);

/**
 * The poison instances' settings: the deployment's (store, lease and recovery settings, keys), on a database of
 * their own beside the witness's, serving only the witness workflow and the built-in conformance ones.
 */
function poisonEnv(env: NodeJS.ProcessEnv, workflowsDir: string): NodeJS.ProcessEnv {
  const own: NodeJS.ProcessEnv = {
    ...env,
    MONGODB_DB: `${env["MONGODB_DB"] ?? "openwop_evidence"}_poison`,
    HANDLERS_MODULE: HANDLERS_FILE,
    WORKFLOWS_DIR: workflowsDir,
    BUILTIN_WORKFLOWS: "conformance",
  };
  // The deployment's default skill is not loaded here (its workflows are not), and a missing one stops the start.
  delete own["DEFAULT_SKILL"];
  return own;
}

async function ledgerOf(file: string): Promise<PoisonLedgerLine[]> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as PoisonLedgerLine);
}

/**
 * poison-exhaustion. Each instance is started with a fresh incarnation, so each restart takes the run up as a
 * takeover of a lease its holder never released, the case the host counts as a death of the node.
 */
export async function poisonExhaustion(w: Witness, bound: RecoveryBound): Promise<RequirementRow> {
  const doc = await getJson<{
    recoveryEvidence?: { attemptBound?: { maxAttempts?: unknown; maxExecutions?: unknown } };
  }>(w, `${w.instances[0]!.baseUrl}/.well-known/openwop`);
  const max = doc.recoveryEvidence?.attemptBound?.maxAttempts;
  if (typeof max !== "number" || !Number.isInteger(max) || max < 1)
    return notPass(
      RECOVERY_ROWS.poisonExhaustion,
      "executed-fail",
      "discovery declares no recoveryEvidence.attemptBound.maxAttempts",
    );
  // A host that charges only deaths while the node ran alone declares how many times it runs in all (its first,
  // uncharged death included); else each death is charged and it runs maxAttempts times.
  const declared = doc.recoveryEvidence?.attemptBound?.maxExecutions;
  const executions = typeof declared === "number" && Number.isInteger(declared) && declared >= max ? declared : max;
  const dir = await mkdtemp(join(tmpdir(), "openwop-evidence-poison-"));
  const ledger = join(dir, "ledger.jsonl");
  const workflows = join(dir, "workflows");
  await mkdir(workflows);
  await writeFile(
    join(workflows, `${WORKFLOW_ID}.json`),
    JSON.stringify({
      id: WORKFLOW_ID,
      name: "Evidence poison",
      description: "evidence run only: one node that kills its own process (RFC 0158 poison-exhaustion).",
      nodes: [{ kind: "task", id: NODE_ID, handler: POISON_HANDLER, params: { ledger } }],
    }),
  );
  const started: Instance[] = [];
  const boot = async () => {
    const instance = await startInstance(w.command, poisonEnv(w.env, workflows), {}, true);
    started.push(instance);
    return instance;
  };
  try {
    const problems = await exhaust(w, bound, { max, executions }, ledger, boot);
    return typeof problems === "string"
      ? notPass(RECOVERY_ROWS.poisonExhaustion, "executed-fail", problems)
      : pass(RECOVERY_ROWS.poisonExhaustion, 8, { detail: problems.detail });
  } finally {
    for (const instance of started) await killInstance(instance);
    await rm(dir, { recursive: true, force: true });
  }
}

/** The exercise: why the row fails (a sentence), or its detail. */
async function exhaust(
  w: Witness,
  bound: RecoveryBound,
  { max, executions }: { max: number; executions: number },
  ledger: string,
  boot: () => Promise<Instance>,
): Promise<string | { detail: string }> {
  // How long a restart may take to take the run up: the kill rows' ceiling (ten times the bound).
  const window = 10 * bound.bound;
  const deaths: Instance[] = [];
  for (let life = 1; life <= executions; life++) {
    const instance = await boot();
    // The first instance accepts the run; its node kills it, answered or not.
    if (life === 1) await startRun(w, instance, WORKFLOW_ID, randomUUID()).catch(() => undefined);
    if (!(await diesWithin(instance, window)))
      return `start ${life} did not die in the poison node within ${window} ms (${deaths.length} deaths so far, RECOVERY_MAX_ATTEMPTS ${max}, ${executions} executions declared)`;
    if (instance.child.signalCode !== "SIGKILL") {
      // Its output goes to the operator, not into the bundle.
      w.log(`poison-exhaustion: start ${life} exited on its own:\n${instance.output().slice(-4000)}`);
      return `start ${life} exited with ${instance.child.exitCode ?? instance.child.signalCode}, not killed by its node`;
    }
    deaths.push(instance);
  }
  const runId = (await ledgerOf(ledger))[0]?.taskId;
  if (!runId) return "the poison node never ran (its ledger is empty)";
  const runUrl = (on: Instance) => `${on.baseUrl}/v1/runs/${encodeURIComponent(runId)}`;

  // The next start must fail the run instead of running the node a further time, and stay up.
  const survivor = await boot();
  const failed = await until(async () => {
    if (!alive(survivor)) return "died";
    const snap = await getJson<RunSnapshot>(w, runUrl(survivor));
    return snap.status === "failed" ? snap : undefined;
  }, window);
  if (failed === "died")
    return `the start after death ${executions} died too: the node ran more than the ${executions} times declared (RECOVERY_MAX_ATTEMPTS ${max})`;
  if (!failed) return `the run was not failed within ${window} ms of the start after death ${executions}`;
  const logAtFailure = await events(w, survivor, runId);

  // Terminal, and the hosts stay up: a peer joins, other work completes, and for twice the recovery bound
  // (two chances for either instance to take the run over) nothing more happens to the run.
  const peer = await boot();
  if (!alive(peer)) return "a peer started after the run failed died at start-up";
  const other = await startRun(w, peer, "conformance-noop", randomUUID());
  const completed = await until(async () => {
    const snap = await getJson<RunSnapshot>(w, `${peer.baseUrl}/v1/runs/${encodeURIComponent(other)}`);
    return snap.status === "completed" ? true : undefined;
  }, window);
  await sleep(2 * bound.bound);
  const log = await events(w, peer, runId);
  const lines = await ledgerOf(ledger);

  const problems: string[] = [];
  if (failed.error?.code !== "poison_exhausted" || failed.error.details?.nodeId !== NODE_ID)
    problems.push(`the run failed with ${JSON.stringify(failed.error)}, not poison_exhausted naming node "${NODE_ID}"`);
  const attempts = lines.map((l) => l.attempt).join(",");
  const expected = Array.from({ length: executions }, (_, i) => i + 1).join(",");
  // The deaths charged, in order: with an uncharged first death, 0 then 1..max; else 1..max.
  const charged = Array.from({ length: executions }, (_, i) => i + 1 - (executions - max)).join(",");
  if (attempts !== expected || lines.some((l) => l.taskId !== runId || l.nodeId !== NODE_ID))
    problems.push(`the node ran as attempts [${attempts}], not once each of [${expected}]`);
  // Each death was a SIGKILL (checked as it happened), and the witness signals no instance until the end: the
  // SIGKILL was the node's own, in the process the ledger names.
  if (lines.map((l) => l.pid).join(",") !== deaths.map((d) => d.child.pid).join(","))
    problems.push("the node's executions were not one in each process that died");
  const crashes = log.filter((e) => e.type === "node.interrupted").map((e) => e.payload?.["crashes"]);
  if (crashes.join(",") !== charged || count(log, "node.started") !== executions || log.at(-1)?.type !== "run.failed")
    problems.push(
      `the run log shows ${count(log, "node.started")} node starts, crashes [${crashes.join(",")}] and ends with ${log.at(-1)?.type}`,
    );
  if (JSON.stringify(log) !== JSON.stringify(logAtFailure)) problems.push("the run changed after it failed");
  const up = [survivor, peer].filter(alive);
  const answering = (await Promise.all(up.map(healthy))).filter(Boolean).length;
  if (answering !== 2) problems.push(`${answering} of the 2 instances are up and answering after the failure`);
  if (!completed) problems.push("another run (conformance-noop) did not complete beside the failed one");
  if (problems.length > 0) return problems.join("; ");
  w.log(
    `poison-exhaustion: the node ran ${executions} times, each in a process it killed; the next start failed the run`,
  );
  return {
    detail: `attempts=${executions} (RECOVERY_MAX_ATTEMPTS ${max}) died=${deaths.map((d) => d.incarnation).join(",")} failed-by=${survivor.incarnation} error=poison_exhausted survivors-answered=2/2 other-run=completed`,
  };
}

const count = (log: readonly RunEvent[], type: string) => log.filter((e) => e.type === type).length;
