// The noisy-neighbour bench (`npm run bench -- noisy-neighbour`; method: docs/performance.md "Noisy neighbour").
// Two instances of our server on one database. Phase 1: tenant B alone sends blocking tasks at `bRate` a second,
// open loop, round robin over the two instances. Phase 2, on fresh instances and a fresh database: the same B
// load while tenant A floods non-blocking tasks at ten times B's rate. Every task runs one node whose handler
// waits `handlerMs` (bench/servers/noisy-handlers.ts). Figures: B's p50/p99 and error rate in each phase and
// their ratio, A's refusals (each binding's limit refusal: HTTP 429, or a JSON-RPC error whose data carries a
// retry time; 0 until per-tenant limits exist), and the fair queue's mean wait per tenant from /metrics.
// TENANT_LIMITS, when set in the environment, reaches the servers unchanged (child processes inherit it).
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { spawnChild, wallNow, type BenchChild } from "./lib/ipc.js";
import { dropDatabase, type StoreServer } from "./lib/store-server.js";
import { latencySummary, round2, table } from "./lib/summary.js";

export interface NoisyNeighbourOptions {
  /** Length of each phase's load. */
  seconds: number;
  /** B's tasks a second; A sends ten times as many. */
  bRate: number;
  /** How long each task's node works (a wait, like a downstream call). */
  handlerMs: number;
  /** WORK_CONCURRENCY of each instance. */
  workConcurrency: number;
}

const A_KEY = "bench-tenant-a-key-0123456789abcdef0123";
const B_KEY = "bench-tenant-b-key-0123456789abcdef0123";
const INSTANCES = 2;

interface TenantTally {
  sent: number;
  ok: number;
  errors: number;
  refusals: number;
  latenciesMs: number[];
  errorSamples: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tally = (): TenantTally => ({ sent: 0, ok: 0, errors: 0, refusals: 0, latenciesMs: [], errorSamples: [] });

/** One message/send over JSON-RPC; a refusal is a 429 or an error whose data names a retry time. */
async function send(
  url: string,
  key: string,
  blocking: boolean,
): Promise<{ ok: true } | { ok: false; refused: boolean; why: string }> {
  try {
    const res = await fetch(`${url}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            role: "user",
            messageId: randomUUID(),
            parts: [{ kind: "text", text: "work" }],
            metadata: { skillId: "bench-work" },
          },
          configuration: { blocking },
        },
      }),
    });
    if (res.status === 429) return { ok: false, refused: true, why: "429" };
    const body = (await res.json()) as {
      result?: { status?: { state?: string } };
      error?: { code: number; message: string; data?: unknown };
    };
    if (body.error) {
      const refused = /retry/i.test(JSON.stringify(body.error.data ?? {}));
      return { ok: false, refused, why: `${body.error.code} ${body.error.message}` };
    }
    const state = body.result?.status?.state;
    if (blocking && state !== "completed") return { ok: false, refused: false, why: `ended ${state}` };
    return { ok: true };
  } catch (err) {
    return { ok: false, refused: false, why: (err as Error).message };
  }
}

/** Sends at `rate` a second for `ms`, open loop: latency counts from the planned send time. */
async function openLoop(
  rate: number,
  ms: number,
  fire: (i: number, plannedAt: number) => Promise<void>,
): Promise<void> {
  const interval = 1000 / rate;
  const start = wallNow();
  const pending: Array<Promise<void>> = [];
  for (let i = 0; i * interval < ms; i++) {
    const plannedAt = start + i * interval;
    const wait = plannedAt - wallNow();
    if (wait > 0) await sleep(wait);
    pending.push(fire(i, plannedAt));
  }
  await Promise.all(pending);
}

function load(urls: string[], key: string, rate: number, ms: number, blocking: boolean, into: TenantTally) {
  return openLoop(rate, ms, async (i, plannedAt) => {
    into.sent++;
    const answer = await send(urls[i % urls.length]!, key, blocking);
    if (answer.ok) {
      into.ok++;
      into.latenciesMs.push(wallNow() - plannedAt);
    } else if (answer.refused) into.refusals++;
    else {
      into.errors++;
      if (into.errorSamples.length < 5) into.errorSamples.push(answer.why);
    }
  });
}

/** The fair queue's admissions per tenant on one instance: count and mean wait, from /metrics. */
async function queueDelay(url: string): Promise<Record<string, { count: number; sumS: number }>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, { count: number; sumS: number }> = {};
  for (const m of text.matchAll(
    /^openwop_work_queue_delay_seconds_(sum|count)\{[^}]*tenant="([^"]+)"[^}]*\} (\S+)$/gm,
  )) {
    const entry = (out[m[2]!] ??= { count: 0, sumS: 0 });
    if (m[1] === "count") entry.count += Number(m[3]);
    else entry.sumS += Number(m[3]);
  }
  return out;
}

function summary(t: TenantTally) {
  return {
    sent: t.sent,
    ok: t.ok,
    errors: t.errors,
    refusals: t.refusals,
    errorRate: t.sent ? round2((100 * t.errors) / t.sent) / 100 : 0,
    ...latencySummary(t.latenciesMs),
    ...(t.errorSamples.length ? { errorSamples: t.errorSamples } : {}),
  };
}

export async function runNoisyNeighbour(
  options: NoisyNeighbourOptions,
  store: StoreServer,
): Promise<{ figures: Record<string, unknown>; printed: string }> {
  const workflows = await mkdtemp(join(tmpdir(), "noisy-neighbour-"));
  await writeFile(
    join(workflows, "bench-work.yaml"),
    `id: bench-work\nname: Bench work\ndescription: one node that waits ${options.handlerMs} ms\nnodes:\n  - { kind: task, id: work, handler: bench-work, params: { ms: ${options.handlerMs} } }\n`,
  );
  const scopes = ["runs:create", "runs:read"];
  const children = new Set<BenchChild>();
  const phase = async (label: string, withA: boolean) => {
    const db = `bench_noisy_${randomUUID().slice(0, 8)}`;
    const urls: string[] = [];
    try {
      for (let i = 0; i < INSTANCES; i++) {
        const child = await spawnChild(`our server ${label}-${i}`, "bench/servers/our-server.ts", {
          env: {
            STORE: "mongodb",
            PORT: "0",
            MONGODB_URI: store.uri,
            MONGODB_DB: db,
            INSTANCE_ID: `${label}-${i}`,
            BUILTIN_WORKFLOWS: "demo",
            WORKFLOWS_DIR: workflows,
            HANDLERS_MODULE: join(import.meta.dirname, "servers", "noisy-handlers.ts"),
            WORK_CONCURRENCY: String(options.workConcurrency),
            BENCH_COUNT_COMMANDS: "0",
            API_KEYS: JSON.stringify([
              { id: "tenant-a", tenant: "tenant-a", scopes, key: A_KEY },
              { id: "tenant-b", tenant: "tenant-b", scopes, key: B_KEY },
            ]),
          },
        });
        children.add(child);
        urls.push(`http://127.0.0.1:${child.ready["port"] as number}`);
      }
      // A short warm-up of B's path on both instances (tsx has compiled everything; this fills the pools).
      await load(urls, B_KEY, options.bRate, 1000, true, tally());
      const a = tally();
      const b = tally();
      console.log(
        `  ${label}: B at ${options.bRate}/s${withA ? `, A at ${10 * options.bRate}/s` : ""} for ${options.seconds} s…`,
      );
      await Promise.all([
        load(urls, B_KEY, options.bRate, options.seconds * 1000, true, b),
        withA ? load(urls, A_KEY, 10 * options.bRate, options.seconds * 1000, false, a) : Promise.resolve(),
      ]);
      const delays = await Promise.all(urls.map(queueDelay));
      const merged: Record<string, { admissions: number; meanWaitMs: number }> = {};
      for (const tenant of new Set(delays.flatMap((d) => Object.keys(d)))) {
        const count = delays.reduce((n, d) => n + (d[tenant]?.count ?? 0), 0);
        const sumS = delays.reduce((n, d) => n + (d[tenant]?.sumS ?? 0), 0);
        merged[tenant] = { admissions: count, meanWaitMs: count ? round2((1000 * sumS) / count) : 0 };
      }
      return { b: summary(b), ...(withA ? { a: summary(a) } : {}), queueDelay: merged };
    } finally {
      await Promise.all([...children].map((c) => c.stop()));
      children.clear();
      await dropDatabase(store.uri, db);
    }
  };
  try {
    const alone = await phase("b-alone", false);
    const noisy = await phase("a-floods", true);
    const p99Ratio = round2(noisy.b.p99Ms / alone.b.p99Ms);
    const figures = {
      loadAverageAtEnd: loadavg().map(round2),
      tenantLimits: process.env["TENANT_LIMITS"] ?? null,
      bAlone: alone,
      aFloods: noisy,
      bP99Ratio: p99Ratio,
      target: { bP99Ratio: 1.5, bErrors: 0 },
      metTarget: p99Ratio <= 1.5 && noisy.b.errors === 0,
    };
    const printed = table(
      ["phase", "B sent", "B p50 ms", "B p99 ms", "B errors", "A sent", "A refusals", "A errors"],
      [
        ["B alone", alone.b.sent, alone.b.p50Ms, alone.b.p99Ms, alone.b.errors, "–", "–", "–"],
        [
          "A floods (10×)",
          noisy.b.sent,
          noisy.b.p50Ms,
          noisy.b.p99Ms,
          noisy.b.errors,
          noisy.a?.sent ?? 0,
          noisy.a?.refusals ?? 0,
          noisy.a?.errors ?? 0,
        ],
      ],
    );
    return { figures, printed: `${printed}\nB p99 ratio (A floods / B alone): ${p99Ratio} (target ≤ 1.5)` };
  } finally {
    await rm(workflows, { recursive: true, force: true });
  }
}
