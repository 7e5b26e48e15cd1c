import { randomUUID } from "node:crypto";
import { RECOVERY_ROWS, rowId, type RecoveryBound, type RequirementRow } from "../domain/evidence-bundle.js";
import { killInstance, startInstance, type HostCommand, type Instance } from "./evidence-instances.js";

// The witness scenarios of OpenWOP RFC 0158 §"Conformance" (at openwop/openwop commit
// 1a06f6f3c070c043a959f82ed3e91e22d26c658e), driven over the host's own wire (A2A JSON-RPC, the OpenWOP runs
// API, discovery) against real processes killed with SIGKILL. Resumption is the first observation that the work
// is taken up again (a peer's `node.started` for undispatched work, its `node.interrupted` for work that was
// running), never completion, and each kill row waits at most its declared bound (ten times it, to report how
// late a late one was).

export interface Witness {
  command: HostCommand;
  env: NodeJS.ProcessEnv;
  /** The live instances (at least two, so a peer exists when the kill lands). */
  instances: Instance[];
  headers: Record<string, string>;
  log: (line: string) => void;
}

interface Snapshot {
  lease?: { instanceId?: string };
}

export interface RunEvent {
  type: string;
  sequence: number;
  timestamp: string;
  nodeId?: string;
  payload?: Record<string, unknown>;
}

export const pass = (scenario: string, assertions: number, extra: Partial<RequirementRow> = {}): RequirementRow => ({
  id: rowId(scenario),
  scenario: `durability/${scenario}`,
  result: "executed-pass",
  assertions,
  ...extra,
});
export const notPass = (scenario: string, result: RequirementRow["result"], detail: string): RequirementRow => ({
  id: rowId(scenario),
  scenario: `durability/${scenario}`,
  result,
  detail,
});

export async function getJson<T>(w: Witness, url: string): Promise<T> {
  const res = await fetch(url, { headers: w.headers });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

async function send(w: Witness, on: Instance, skillId: string, messageId: string): Promise<string | undefined> {
  const res = await fetch(`${on.baseUrl}/a2a/jsonrpc`, {
    method: "POST",
    headers: { ...w.headers, "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: {
        message: {
          kind: "message",
          role: "user",
          messageId,
          parts: [{ kind: "text", text: "witness" }],
          metadata: { skillId },
        },
        configuration: { blocking: false },
      },
    }),
  });
  const body = (await res.json()) as { result?: { id?: string }; error?: { message?: string } };
  if (!body.result?.id) throw new Error(`message/send to ${skillId}: ${body.error?.message ?? "no task id"}`);
  return body.result.id;
}

/** POST /v1/runs of `workflowId` with an Idempotency-Key: the stored run's id. */
export async function startRun(w: Witness, on: Instance, workflowId: string, key: string): Promise<string> {
  const res = await fetch(`${on.baseUrl}/v1/runs`, {
    method: "POST",
    headers: { ...w.headers, "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ workflowId }),
  });
  const body = (await res.json()) as { runId?: string };
  if (!res.ok || !body.runId) throw new Error(`POST /v1/runs: HTTP ${res.status}`);
  return body.runId;
}

export const events = async (w: Witness, on: Instance, runId: string): Promise<RunEvent[]> =>
  (
    await getJson<{ events: RunEvent[] }>(
      w,
      `${on.baseUrl}/v1/runs/${encodeURIComponent(runId)}/events/poll?timeoutMs=0&limit=1000`,
    )
  ).events;

export async function until<T>(read: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read().catch(() => undefined);
    if (value !== undefined || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** bound-is-derived: the declared bounds, each equal to the sum of its terms (a paper check, never liveness). */
export async function boundIsDerived(w: Witness): Promise<{ row: RequirementRow; bound?: RecoveryBound }> {
  const doc = await getJson<{ recoveryEvidence?: { recoveryBounds?: RecoveryBound[] } }>(
    w,
    `${w.instances[0]!.baseUrl}/.well-known/openwop`,
  );
  const bounds = (doc?.recoveryEvidence?.recoveryBounds ?? []) as RecoveryBound[];
  if (bounds.length === 0)
    return { row: notPass(RECOVERY_ROWS.boundIsDerived, "executed-fail", "discovery declares no recoveryBounds[]") };
  const wrong = bounds.filter((b) => b.terms.reduce((s, t) => s + t.ms, 0) !== b.bound);
  if (wrong.length > 0)
    return {
      row: notPass(
        RECOVERY_ROWS.boundIsDerived,
        "executed-fail",
        `bounds not the sum of their terms: ${wrong.map((b) => b.class).join(", ")}`,
      ),
    };
  const recoveryBounds = bounds.map((b) => ({
    class: b.class,
    bound: b.bound,
    terms: b.terms.map((t) => ({ name: t.name, ms: t.ms })),
  }));
  return {
    row: pass(RECOVERY_ROWS.boundIsDerived, bounds.length, { evidence: { recoveryBounds } }),
    bound: recoveryBounds[0],
  };
}

/**
 * kill-after-accept (a hold-dispatch row): an extra instance whose store kill seam
 * (OPENWOP_TEST_KILL_AFTER_EVENTS_WRITE=node.started, refused in production) dies inside the write of the
 * node's start: the run is stored and started, its dispatch never committed. A peer must dispatch it. Then
 * duplicate-delivery: the same request (its Idempotency-Key) delivered again to two other instances is the same run, run once.
 */
export async function killAfterAccept(
  w: Witness,
  bound: RecoveryBound,
  skill: string | undefined,
): Promise<RequirementRow[]> {
  if (w.env["NODE_ENV"] === "production")
    return [
      notPass(
        RECOVERY_ROWS.killAfterAccept,
        "blocked",
        "precondition unmet: the store's kill seam that holds dispatch is refused with NODE_ENV=production",
      ),
      notPass(RECOVERY_ROWS.duplicateDelivery, "blocked", "precondition unmet: runs on the kill-after-accept exercise"),
    ];
  if (!skill)
    return [
      notPass(
        RECOVERY_ROWS.killAfterAccept,
        "blocked",
        "precondition unmet: no skill whose first node has effects was named (--accept-skill); the built-in workflows' first nodes are pure, so their acceptance and dispatch are one write with no window to hold",
      ),
      notPass(RECOVERY_ROWS.duplicateDelivery, "blocked", "precondition unmet: runs on the kill-after-accept exercise"),
    ];
  const victim = await startInstance(w.command, w.env, { OPENWOP_TEST_KILL_AFTER_EVENTS_WRITE: "node.started" });
  const key = randomUUID();
  // The run is stored by its creating write; the next write (node.started) kills the process, answered or not.
  await startRun(w, victim, skill, key).catch(() => undefined);
  const killedAt = await victim.exited;
  // The same request to a peer answers the stored run (its Idempotency-Key was stored with it).
  const runId = await startRun(w, w.instances[0]!, skill, key);
  const [peerA, peerB] = w.instances as [Instance, Instance, ...Instance[]];
  const started = await until(
    async () => (await events(w, peerA, runId)).find((e) => e.type === "node.started"),
    10 * bound.bound,
  );
  if (!started)
    return [
      notPass(
        RECOVERY_ROWS.killAfterAccept,
        "executed-fail",
        `no peer dispatched the run within ${10 * bound.bound} ms`,
      ),
    ];
  const created = (await events(w, peerA, runId)).find((e) => e.type === "run.created");
  // Stored before the kill, dispatched after it: the seam dies inside the write of node.started, so a committed
  // node.started is a peer's.
  if (
    victim.child.signalCode !== "SIGKILL" ||
    !created ||
    Date.parse(created.timestamp) > killedAt ||
    Date.parse(started.timestamp) < killedAt
  )
    return [
      notPass(
        RECOVERY_ROWS.killAfterAccept,
        "executed-fail",
        "the run was not stored before the kill and dispatched after it",
      ),
    ];
  const observedMs = Date.parse(started.timestamp) - killedAt;
  w.log(`kill-after-accept: a peer dispatched ${observedMs} ms after the kill (bound ${bound.bound} ms)`);
  const recovery = { class: bound.class, boundMs: bound.bound, observedMs };
  const row =
    observedMs <= bound.bound
      ? pass(RECOVERY_ROWS.killAfterAccept, 3, { evidence: { recovery } })
      : notPass(
          RECOVERY_ROWS.killAfterAccept,
          "executed-fail",
          `resumed after ${observedMs} ms, beyond the ${bound.bound} ms bound`,
        );

  for (const target of [peerA, peerB]) {
    if ((await startRun(w, target, skill, key)) !== runId)
      return [row, notPass(RECOVERY_ROWS.duplicateDelivery, "executed-fail", "a redelivered message made another run")];
  }
  const done = await until(async () => {
    const log = await events(w, peerB, runId);
    return log.some((e) => e.type === "run.completed") ? log : undefined;
  }, 30_000);
  const count = (type: string) => done?.filter((e) => e.type === type).length ?? 0;
  const once = count("run.started") === 1 && count("node.started") === 1 && count("run.completed") === 1;
  return [
    row,
    once
      ? pass(RECOVERY_ROWS.duplicateDelivery, 3, {
          detail:
            "invocations counted in the host's committed run log (node.started), not at a receiver the witness owns",
        })
      : notPass(
          RECOVERY_ROWS.duplicateDelivery,
          "executed-fail",
          `the run log shows ${count("node.started")} node starts and ${count("run.completed")} completions`,
        ),
  ];
}

/**
 * kill-during-execution and peer-resume: a run whose node works until cancelled (conformance-cancellable) is
 * accepted and executed by instance 0, which is killed once it holds the run's lease and the node started; a
 * different process must resume it within the bound, while the survivors keep answering (the reachability
 * trace). The run is cancelled afterwards.
 */
export async function killDuringExecution(w: Witness, bound: RecoveryBound): Promise<RequirementRow[]> {
  const [victim, ...peers] = w.instances as [Instance, ...Instance[]];
  const runId = await send(w, victim, "conformance-cancellable", randomUUID());
  const held = await until(async () => {
    const snap = await getJson<Snapshot>(w, `${victim.baseUrl}/v1/runs/${encodeURIComponent(runId!)}`);
    const log = await events(w, victim, runId!);
    return snap?.lease?.instanceId === victim.incarnation && log.some((e) => e.type === "node.started")
      ? true
      : undefined;
  }, 30_000);
  if (!held)
    return [
      notPass(
        RECOVERY_ROWS.killDuringExecution,
        "executed-fail",
        "the accepting instance never held the run while its node ran",
      ),
    ];
  let probes = 0;
  let answered = 0;
  let probing = true;
  const trace = (async () => {
    while (probing) {
      for (const peer of peers) {
        probes++;
        if (
          await fetch(`${peer.baseUrl}/healthz`).then(
            (r) => r.ok,
            () => false,
          )
        )
          answered++;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const killedAt = await killInstance(victim);
  w.instances.splice(0, 1);
  const resumed = await until(
    async () => (await events(w, peers[0]!, runId!)).find((e) => e.type === "node.interrupted"),
    10 * bound.bound,
  );
  probing = false;
  await trace;
  const snap = await getJson<Snapshot>(w, `${peers[0]!.baseUrl}/v1/runs/${encodeURIComponent(runId!)}`).catch(
    () => undefined,
  );
  await fetch(`${peers[0]!.baseUrl}/v1/runs/${encodeURIComponent(runId!)}/cancel`, {
    method: "POST",
    headers: w.headers,
  }).catch(() => undefined);
  if (!resumed)
    return [
      notPass(
        RECOVERY_ROWS.killDuringExecution,
        "executed-fail",
        `no peer resumed the run within ${10 * bound.bound} ms`,
      ),
      notPass(RECOVERY_ROWS.peerResume, "executed-fail", "the run was not resumed"),
    ];
  const observedMs = Math.max(0, Date.parse(resumed.timestamp) - killedAt);
  w.log(`kill-during-execution: a peer resumed ${observedMs} ms after the kill (bound ${bound.bound} ms)`);
  const recovery = { class: bound.class, boundMs: bound.bound, observedMs };
  const resumer = snap?.lease?.instanceId as string | undefined;
  const row =
    observedMs <= bound.bound
      ? pass(RECOVERY_ROWS.killDuringExecution, 3, { evidence: { recovery } })
      : notPass(
          RECOVERY_ROWS.killDuringExecution,
          "executed-fail",
          `resumed after ${observedMs} ms, beyond the ${bound.bound} ms bound`,
        );
  const peerRow =
    resumer && resumer !== victim.incarnation && peers.some((p) => p.incarnation === resumer) && answered === probes
      ? pass(RECOVERY_ROWS.peerResume, 3, {
          detail: `accepted-by=${victim.incarnation} resumed-by=${resumer} survivors-answered=${answered}/${probes}`,
        })
      : notPass(
          RECOVERY_ROWS.peerResume,
          "executed-fail",
          `resumed by ${resumer ?? "no instance"} (accepted by ${victim.incarnation}); survivors answered ${answered}/${probes} probes`,
        );
  return [row, peerRow];
}
