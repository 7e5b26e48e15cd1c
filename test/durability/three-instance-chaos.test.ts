// Three host processes on one database under chaos: ~300 mixed tasks (echo, approval, delay) sent round-robin
// through the three instances over JSON-RPC 0.3, HTTP+JSON and gRPC; approvals answered through another
// instance than the one that created the task; followers (A2A resubscribe, OpenWOP event streams) attached
// to other instances; push configs on a subset with a real webhook receiver. Meanwhile a random instance is
// SIGKILLed and restarted (as a new INSTANCE_ID) four times. Afterwards the store, the followers and the
// receiver must tell one consistent story: every acknowledged task completed once, its log gap-free, each
// node's effect (recorded by the `record-effect` handler in its own collection) run at most twice and twice
// only when the instance that ran it first was killed.
import { randomBytes, randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { answerTask, BINDINGS, HostCluster, sendTask, type Binding } from "../support/host-cluster.js";
import { PushReceiver, waitFor } from "../support/push-receiver.js";
import { EFFECT_RECORDING_HANDLERS, HOST_MAIN } from "../support/server-process.js";
import { followProblems, followTask, type FollowResult, type LoggedEvent } from "../support/task-followers.js";

const TASKS = 300;
const INSTANCES = 3;
const KILLS = 4;
const LEASE_TTL_MS = 2_000;
/** Sends are spread over this window so the kills land while tasks keep arriving. */
const SEND_WINDOW_MS = 26_000;
const SENDERS = 6;
/** Between two kills: the victim's tasks are taken over (TTL) and their nodes finish before the next kill. */
const KILL_SPACING_MS = LEASE_TTL_MS + 2_500;
const SETTLE_MS = 60_000;
const EFFECTS = "test_effects";

const WORKFLOWS_DIR = new URL("../fixtures/chaos-workflows", import.meta.url).pathname;
const KINDS = [
  { skill: "chaos-echo", effects: ["work"], approval: false },
  { skill: "chaos-approval", effects: ["prepare", "finalize"], approval: true },
  { skill: "chaos-delay", effects: ["before", "after"], approval: false },
] as const;
const PUSHED_STATES = new Set(["input-required", "auth-required", "completed", "failed", "canceled", "rejected"]);

interface Sent {
  i: number;
  taskId: string;
  kind: (typeof KINDS)[number];
  binding: Binding;
  slot: number;
  via: string;
  pushPath?: string;
}

interface Effect {
  taskId: string;
  nodeId: string;
  attempt: number;
  idempotencyKey: string;
  instanceId: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A small seeded generator: a failing run names its seed (CHAOS_SEED reruns it with the same victims). */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("three instances on one database, under SIGKILL chaos", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `chaos_${randomUUID().slice(0, 8)}`;
  const seed = Number(process.env["CHAOS_SEED"] ?? Math.floor(Math.random() * 2 ** 31));
  const random = seeded(seed);
  const receiver = new PushReceiver();
  let mongo: MongoClient;
  let cluster: HostCluster;

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
    await receiver.start();
    cluster = new HostCluster(
      {
        MONGODB_URI: mongoUri,
        MONGODB_DB: dbName,
        NODE_ENV: "test",
        LOG_LEVEL: "info",
        WORKFLOWS_DIR,
        EFFECTS_COLLECTION: EFFECTS,
        HANDLERS_MODULE: EFFECT_RECORDING_HANDLERS,
        TIMER_POLL_MS: "100",
        LEASE_TTL_MS: String(LEASE_TTL_MS),
        LEASE_HEARTBEAT_MS: "400",
        PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
        PUSH_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
        PUSH_SIGNING_KEY: randomBytes(24).toString("base64url"),
        PUSH_RETRY_BASE_MS: "50",
        PUSH_RETRY_MAX_MS: "500",
        PUSH_SWEEP_INTERVAL_MS: "500",
      },
      HOST_MAIN,
    );
    await Promise.all(Array.from({ length: INSTANCES }, (_, slot) => cluster.start(slot)));
  }, 90_000);

  afterAll(async () => {
    await cluster?.stopAll();
    await receiver.stop();
    await mongo?.db(dbName).dropDatabase();
    await mongo?.close();
  });

  const db = () => mongo.db(dbName);

  /** The committed log (events up to the head's version; a crash may leave unreferenced ones after it). */
  async function committedLog(taskId: string): Promise<LoggedEvent[]> {
    const head = await db().collection<{ _id: string; version: number }>("tasks").findOne({ _id: taskId });
    const events = await db()
      .collection<LoggedEvent & { taskId: string }>("task_events")
      .find({ taskId })
      .sort({ sequence: 1 })
      .toArray();
    return events.filter((e) => e.sequence <= (head?.version ?? -1));
  }

  it(`${TASKS} tasks across ${INSTANCES} instances with ${KILLS} SIGKILLs: every acknowledged task completes once, consistently everywhere`, async () => {
    const startedAt = Date.now();
    const sent: Sent[] = [];
    const unacknowledged: string[] = [];
    const followers: Array<Promise<FollowResult>> = [];
    /** Approval tasks answered (the instance that took the answer), and every attempt per task. */
    const answered = new Map<string, string>();
    const attempts = new Map<string, string[]>();
    let sending = true;
    let sentAt: number | undefined = undefined;
    /** Followers and the approver give up SETTLE_MS after the last send (until then, in 30 s steps). */
    const settleDeadline = () => (sentAt === undefined ? Date.now() + 30_000 : sentAt + SETTLE_MS);

    // --- the senders: round-robin over instances, and over bindings within each instance's share
    let next = 0;
    const sender = async () => {
      for (let i = next++; i < TASKS; i = next++) {
        const due = startedAt + (i * SEND_WINDOW_MS) / TASKS;
        if (due > Date.now()) await sleep(due - Date.now());
        const kind = KINDS[i % KINDS.length]!;
        const binding = BINDINGS[Math.floor(i / INSTANCES) % BINDINGS.length]!;
        const on = cluster.pick(i % INSTANCES);
        if (!on) {
          unacknowledged.push(`#${i}: no live instance`);
          continue;
        }
        const pushPath = i % 5 === 0 ? `/hook/${i}` : undefined;
        try {
          const taskId = await sendTask(
            on,
            binding,
            kind.skill,
            `task ${i}`,
            pushPath ? { url: receiver.url(pushPath), token: `token-${i}` } : undefined,
          );
          sent.push({ i, taskId, kind, binding, slot: on.slot, via: on.instanceId, ...(pushPath ? { pushPath } : {}) });
          if (i % 10 === 3 || i % 10 === 8)
            followers.push(followTask(cluster, i % 10 === 3 ? "a2a" : "openwop", taskId, on.slot, settleDeadline));
        } catch (err) {
          // Sent to an instance that died meanwhile: not acknowledged (the task may or may not exist).
          unacknowledged.push(`#${i} via ${on.instanceId} (${binding}): ${(err as Error).message.slice(0, 120)}`);
        }
      }
    };

    // --- the approver: answers each waiting approval through an instance other than the creating one. An
    // answer whose reply was lost (its instance died) may have been committed: a task that no longer waits
    // after an attempt counts as answered; one that still waits is asked again.
    const approver = async () => {
      let turn = 0;
      while (Date.now() < settleDeadline()) {
        const pending = sent.filter((s) => s.kind.approval && !answered.has(s.taskId));
        if (!sending && pending.length === 0) return;
        const heads = await db()
          .collection<{ _id: string; a2a: { state: string } }>("tasks")
          .find({ _id: { $in: pending.map((s) => s.taskId) } }, { projection: { _id: 1, "a2a.state": 1 } })
          .toArray();
        await Promise.all(
          heads.map(async ({ _id: taskId, a2a }) => {
            const tried = attempts.get(taskId) ?? [];
            if (a2a.state !== "input-required") {
              if (tried.length > 0) answered.set(taskId, tried.join(","));
              return;
            }
            const task = sent.find((s) => s.taskId === taskId)!;
            const others = cluster.live().filter((s) => s.slot !== task.slot);
            const on = others[turn++ % Math.max(1, others.length)];
            if (!on) return;
            attempts.set(taskId, [...tried, on.instanceId]);
            try {
              await answerTask(on, BINDINGS[turn % BINDINGS.length]!, taskId, "accept");
              answered.set(taskId, on.instanceId);
            } catch {
              // That instance died under the request; the next round looks again.
            }
          }),
        );
        await sleep(300);
      }
    };

    // --- the chaos: SIGKILL a random live instance and restart its slot (as a new incarnation) in the
    // background; the next kill follows KILL_SPACING_MS later, while at least one other instance is up.
    const kills: string[] = [];
    const chaos = async () => {
      const restarts: Array<Promise<unknown>> = [];
      await sleep(2_000);
      for (let k = 0; k < KILLS; k++) {
        while (cluster.live().length < 2) await sleep(100);
        const live = cluster.live();
        const victim = live[Math.floor(random() * live.length)]!;
        kills.push(`${victim.instanceId} at +${Date.now() - startedAt} ms`);
        await cluster.kill(victim.slot);
        restarts.push(cluster.start(victim.slot));
        await sleep(KILL_SPACING_MS);
      }
      await Promise.all(restarts);
    };

    const approving = approver();
    await Promise.all([...Array.from({ length: SENDERS }, sender), chaos()]);
    sending = false;
    sentAt = Date.now();
    const phases = [`sent +${Date.now() - startedAt}`];
    await approving;
    phases.push(`answered +${Date.now() - startedAt}`);
    console.log(
      `chaos seed ${seed}; kills: ${kills.join(", ")}; acknowledged ${sent.length}/${TASKS}; not acknowledged: ${unacknowledged.length}`,
      unacknowledged,
    );

    // --- settle: every acknowledged task ends (bounded; polls the store)
    const ids = sent.map((s) => s.taskId);
    const open = () =>
      db()
        .collection("tasks")
        .countDocuments({
          _id: { $in: ids as never[] },
          "a2a.state": { $nin: ["completed", "failed", "canceled", "rejected"] },
        });
    await waitFor(async () => (await open()) === 0, SETTLE_MS, "every acknowledged task to end").catch(() => undefined);
    phases.push(`ended +${Date.now() - startedAt}`);
    const follows = await Promise.all(followers);
    phases.push(`followed +${Date.now() - startedAt}`);

    expect(kills).toHaveLength(KILLS);
    // A send can only fail when it raced a kill of the instance it went to.
    expect(sent.length).toBeGreaterThanOrEqual(TASKS - KILLS * SENDERS);
    const problems: string[] = [];
    const effects = await db()
      .collection<Effect>(EFFECTS)
      .find({ taskId: { $in: ids } })
      .toArray();
    let afterKill = 0;
    let afterStall = 0;
    for (const task of sent) {
      const head = await db()
        .collection<{ _id: string; a2a: { state: string } }>("tasks")
        .findOne({ _id: task.taskId });
      const log = await committedLog(task.taskId);
      const label = `${task.kind.skill} ${task.taskId} (#${task.i} via ${task.via} over ${task.binding})`;
      if (head?.a2a.state !== "completed") problems.push(`${label} is ${head?.a2a.state ?? "missing"}, not completed`);
      if (log.some((e, n) => e.sequence !== n))
        problems.push(`${label}: log sequences not gap-free: ${log.map((e) => e.sequence).join(",")}`);
      const count = (type: string) => log.filter((e) => e.type === type).length;
      if (count("run.started") !== 1) problems.push(`${label}: ${count("run.started")} run.started events`);
      if (count("run.completed") !== 1 || log.at(-1)?.type !== "run.completed")
        problems.push(`${label}: does not end with one run.completed`);
      const states = log.flatMap((e) => (e.a2a?.status ? [e.a2a.status.state] : []));
      if (
        task.kind.approval &&
        (!answered.has(task.taskId) ||
          states.indexOf("input-required") < 0 ||
          states.indexOf("input-required") > states.lastIndexOf("completed"))
      ) {
        problems.push(`${label}: completed without waiting for its approval (states ${states.join(",")})`);
      }
      for (const nodeId of task.kind.effects) {
        const runs = effects
          .filter((e) => e.taskId === task.taskId && e.nodeId === nodeId)
          .sort((a, b) => a.attempt - b.attempt);
        if (runs.length < 1) problems.push(`${label}: node ${nodeId} never ran`);
        // Each re-run follows a failover of the runner before it: killed, or stalled past its lease and fenced
        // (a CPU-starved process; it may even take the lease back later). A kill explains one re-run only: a third
        // run needs a second victim (the runner that took over was killed too: recovery slower than the spacing of
        // the kills, on a loaded machine) or a stall; the same victim twice is a problem.
        let stalls = 0;
        const victims = new Set<string>();
        for (const [k, run] of runs.slice(0, -1).entries()) {
          if (run.idempotencyKey !== runs[k + 1]!.idempotencyKey)
            problems.push(`${label}: node ${nodeId} re-ran with another idempotency key: ${JSON.stringify(runs)}`);
          if (cluster.killed.has(run.instanceId) && !victims.has(run.instanceId)) {
            victims.add(run.instanceId);
            afterKill++;
          } else if (
            await waitFor(() => cluster.leasesLost(run.instanceId).has(task.taskId), 10_000).catch(() => false)
          )
            stalls++;
          else
            problems.push(
              `${label}: node ${nodeId} re-ran, but ${run.instanceId} (run ${k + 1}) was neither killed nor lost its lease: ${JSON.stringify(runs)}; log ${JSON.stringify(log.map((e) => [e.sequence, e.type, e.nodeId, (e as { timestamp?: string }).timestamp]))}`,
            );
        }
        afterStall += stalls;
      }
      // Push: every pushable state of the log arrived, each event at least once, in order (first arrivals).
      if (task.pushPath) {
        const want = log
          .filter((e) => e.a2a?.status && PUSHED_STATES.has(e.a2a.status.state))
          .map((e) => `${e.eventId}:${e.a2a!.status!.state}`);
        const deadline = Date.now() + 20_000;
        let got: string[] = [];
        do {
          const firsts = new Map<string, string>();
          for (const hit of receiver.hits.filter((h) => h.path === task.pushPath)) {
            const id = String(hit.headers["x-a2a-event-id"]);
            if (!firsts.has(id)) firsts.set(id, `${id}:${hit.json["status"]?.["state"] as string}`);
          }
          got = [...firsts.values()];
          if (got.length >= want.length) break;
          await sleep(100);
        } while (Date.now() < deadline);
        if (JSON.stringify(got) !== JSON.stringify(want))
          problems.push(
            `${label}: push received ${JSON.stringify(got)}, the log's pushable states are ${JSON.stringify(want)}`,
          );
      }
    }
    for (const follow of follows) problems.push(...followProblems(follow, await committedLog(follow.taskId)));
    phases.push(`checked +${Date.now() - startedAt}`);
    console.log(`phases (ms): ${phases.join(", ")}`);
    console.log(
      `nodes re-executed across a failover: ${afterKill} after a kill, ${afterStall} after a stalled owner lost its lease; followers: ${follows.length} (${follows.reduce((n, f) => n + f.segments.length, 0)} connections)`,
    );
    expect(problems, `seed ${seed}`).toEqual([]);
    expect(follows.length).toBeGreaterThan(0);
    expect(sent.filter((s) => s.pushPath).length).toBeGreaterThan(0);
  }, 170_000);
});
