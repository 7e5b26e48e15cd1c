// (d) of the scale figures (bench/scale.ts): RSS with many resubscribe streams, and commit → subscriber latency.
// Method: README.md.
import { procCpuMs, wallNow, type Usage } from "./lib/ipc.js";
import { latencySummary, mb, round2 } from "./lib/summary.js";
import { commandTotal, type Ctx, type Sent } from "./scale-context.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * (d) Opens `streams` resubscribe streams on one working task (the `conformance-cancellable` skill), cancels
 * it, and takes, for each stream, the time from the cancel's first commit returning in the server to the
 * stream receiving its next event. Resolves with the server's RSS while the streams were open.
 */
async function fanOut(
  ctx: Ctx,
  streams: number,
): Promise<{
  latenciesMs: number[];
  ownCommitMs: number[];
  commits: number;
  missed: number;
  rssBytes: number;
  openSec: number;
  commands: number;
  cpuMs: number;
  loadCpuMs: number;
}> {
  const [task] = await ctx.load.call<Sent[]>("createTasks", {
    baseUrl: ctx.baseUrl,
    skill: "conformance-cancellable",
    count: 1,
    concurrency: 1,
    blocking: false,
  });
  const opened = performance.now();
  await ctx.load.call("openStreams", { baseUrl: ctx.baseUrl, taskId: task!.taskId, count: streams, batch: 500 });
  const openSec = (performance.now() - opened) / 1000;
  const { rssBytes } = await ctx.server.call<Usage>("gc");
  const commandsBefore = await commandTotal(ctx.server);
  const cpuBefore = (await ctx.server.call<Usage>("stats")).cpuMs;
  const loadCpuBefore = procCpuMs(ctx.load.pid);
  const from = wallNow();
  const [cancelled] = (
    await ctx.load.call<{ results: Sent[] }>("sequence", {
      baseUrl: ctx.baseUrl,
      protocol: "jsonrpc",
      ops: [{ cancel: task!.taskId }],
    })
  ).results;
  if (cancelled?.state !== "canceled") throw new Error(`cancel left task ${task!.taskId} ${cancelled?.state ?? "?"}`);
  // Wait (at most 10 s) until every stream got an event after the cancel; a stream that got none is "missed".
  let receipts: number[][] = [];
  for (let polls = 0; polls < 50; polls++) {
    await sleep(200);
    receipts = await ctx.load.call<number[][]>("streamReceipts", { limit: streams });
    if (receipts.every((times) => times.some((t) => t >= from))) break;
  }
  const commands = (await commandTotal(ctx.server)) - commandsBefore;
  const cpuMs = (await ctx.server.call<Usage>("stats")).cpuMs - cpuBefore;
  const loadCpuMs = procCpuMs(ctx.load.pid) - loadCpuBefore;
  const commits = (await ctx.server.call<number[]>("commitTimes", task!.taskId)).filter((c) => c >= from);
  const commit = commits[0];
  if (commit === undefined) throw new Error(`no commit of task ${task!.taskId} after the cancel`);
  await ctx.load.call("closeStreams");
  const latenciesMs: number[] = [];
  // The cancel commits twice (cancelling, then cancelled by the driver) and only the second carries a status
  // update: also measured from the last commit before the receipt, which leaves the driver's work out.
  const ownCommitMs: number[] = [];
  let missed = 0;
  for (const times of receipts) {
    const got = times.find((t) => t >= commit);
    if (got === undefined) missed++;
    else {
      latenciesMs.push(got - commit);
      ownCommitMs.push(got - commits.filter((c) => c <= got).at(-1)!);
    }
  }
  return { latenciesMs, ownCommitMs, commits: commits.length, missed, rssBytes, openSec, commands, cpuMs, loadCpuMs };
}

export async function streamFigures(
  ctx: Ctx,
  options: { streams: number; latencyStreams: number; triggers: number },
): Promise<Record<string, unknown>> {
  const idle = await ctx.server.call<Usage>("gc");
  const few = Math.min(options.latencyStreams, options.streams);
  const samples = {
    latenciesMs: [] as number[],
    ownCommitMs: [] as number[],
    commits: 0,
    missed: 0,
    rssBytes: 0,
    commands: 0,
    cpuMs: 0,
    loadCpuMs: 0,
  };
  for (let i = 0; i < options.triggers; i++) {
    const r = await fanOut(ctx, few);
    samples.latenciesMs.push(...r.latenciesMs);
    samples.ownCommitMs.push(...r.ownCommitMs);
    samples.commits += r.commits;
    samples.missed += r.missed;
    samples.rssBytes = Math.max(samples.rssBytes, r.rssBytes);
    samples.commands += r.commands;
    samples.cpuMs += r.cpuMs;
    samples.loadCpuMs += r.loadCpuMs;
  }
  const all = await fanOut(ctx, options.streams);
  // Store commands from the cancel until every stream got its event: the cancel's own, plus the fan-out's reads.
  // Our server's CPU from the cancel until every stream got its event (and ended), per stream: less noisy
  // than the latency on a shared machine. The load generator's too: its receiving is part of the latency.
  const latency = (
    r: { latenciesMs: number[]; ownCommitMs: number[]; missed: number },
    perCancel: { commands: number; commits: number; cpuMs: number; loadCpuMs: number },
    streams: number,
  ) => {
    const own = latencySummary(r.ownCommitMs);
    return {
      ...latencySummary(r.latenciesMs),
      samples: r.latenciesMs.length,
      missed: r.missed,
      p50MsFromItsCommit: own.p50Ms,
      p99MsFromItsCommit: own.p99Ms,
      storeCommandsPerCancel: round2(perCancel.commands),
      commitsPerCancel: round2(perCancel.commits),
      serverCpuUsPerStream: Math.round((perCancel.cpuMs * 1000) / streams),
      loadGeneratorCpuUsPerStream: Math.round((perCancel.loadCpuMs * 1000) / streams),
    };
  };
  return {
    rssIdleMb: mb(idle.rssBytes),
    [`rssAt${few}StreamsMb`]: mb(samples.rssBytes),
    [`rssAt${options.streams}StreamsMb`]: mb(all.rssBytes),
    [`openSecFor${options.streams}Streams`]: round2(all.openSec),
    [`commitToSubscriberAt${few}Streams`]: latency(
      samples,
      {
        commands: samples.commands / options.triggers,
        commits: samples.commits / options.triggers,
        cpuMs: samples.cpuMs / options.triggers,
        loadCpuMs: samples.loadCpuMs / options.triggers,
      },
      few,
    ),
    [`commitToSubscriberAt${options.streams}Streams`]: latency(all, all, options.streams),
  };
}
