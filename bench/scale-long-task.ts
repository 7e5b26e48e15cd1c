// (c) of the scale figures (bench/scale.ts): one more transition on a task with a long event log against one on
// a fresh task. Method: README.md.
import type { TaskStore } from "../src/store/task-store.js";
import type { Usage } from "./lib/ipc.js";
import { latencySummary, round2 } from "./lib/summary.js";
import type { SendOp } from "./load/protocols.js";
import { commandTotal, type Ctx, type Sent } from "./scale-context.js";

const REFINE: Record<string, unknown> = { action: "refine", feedback: "once more" };
/** Refines measured per batch in (c), and batches per kind. */
const TRANSITION_SAMPLES = 10;
const TRANSITION_BATCHES = 3;
/** (c) stops growing its long task after this long, and reports the events it reached. */
const LONG_TASK_BUILD_LIMIT_MS = 180_000;

/** (c) Refines one at a time, on the same long task or one each on fresh tasks: latency, CPU, commands. */
async function refineBatch(
  ctx: Ctx,
  reader: TaskStore,
  taskIds: string[],
  historyLength?: number,
): Promise<{ latenciesMs: number[]; cpuMs: number; commands: number; events: number }> {
  const distinct = [...new Set(taskIds)];
  const versions = await Promise.all(distinct.map(async (id) => (await reader.get(id))!.version));
  const before = await ctx.server.call<Usage>("stats");
  const commandsBefore = await commandTotal(ctx.server);
  const ops: SendOp[] = taskIds.map((taskId) => ({
    taskId,
    data: REFINE,
    ...(historyLength === undefined ? {} : { historyLength }),
  }));
  const { latenciesMs, results } = await ctx.load.call<{ latenciesMs: number[]; results: Sent[] }>("sequence", {
    baseUrl: ctx.baseUrl,
    protocol: "jsonrpc",
    ops,
  });
  const after = await ctx.server.call<Usage>("stats");
  const commands = (await commandTotal(ctx.server)) - commandsBefore;
  const bad = results.find((r) => r.state !== "input-required");
  if (bad) throw new Error(`a refine left task ${bad.taskId} ${bad.state}`);
  const versionsAfter = await Promise.all(distinct.map(async (id) => (await reader.get(id))!.version));
  const events = versionsAfter.reduce((sum, v, i) => sum + v - versions[i]!, 0);
  return { latenciesMs, cpuMs: after.cpuMs - before.cpuMs, commands, events };
}

export async function longTaskFigures(
  ctx: Ctx,
  reader: TaskStore,
  targetEvents: number,
): Promise<Record<string, unknown>> {
  const [long] = await ctx.load.call<Sent[]>("createTasks", {
    baseUrl: ctx.baseUrl,
    skill: "approval-gate",
    count: 1,
    concurrency: 1,
  });
  const built = performance.now();
  // Grow the log by real transitions (refine loops), in batches of 10, until it holds targetEvents events or
  // the time limit is reached.
  const eventsNow = async () => (await reader.get(long!.taskId))!.version + 1;
  const refines = (n: number) =>
    ctx.load.call("sequence", {
      baseUrl: ctx.baseUrl,
      protocol: "jsonrpc",
      ops: Array.from({ length: n }, (): SendOp => ({ taskId: long!.taskId, data: REFINE })),
    });
  const initial = await eventsNow();
  await refines(1);
  const perRefine = Math.max(1, (await eventsNow()) - initial);
  for (
    let now = await eventsNow();
    now < targetEvents && performance.now() - built < LONG_TASK_BUILD_LIMIT_MS;
    now = await eventsNow()
  ) {
    await refines(Math.min(10, Math.ceil((targetEvents - now) / perRefine)));
  }
  const buildSec = round2((performance.now() - built) / 1000);
  const eventsAtStart = (await reader.get(long!.taskId))!.version + 1;
  const fresh = await ctx.load.call<Sent[]>("createTasks", {
    baseUrl: ctx.baseUrl,
    skill: "approval-gate",
    count: TRANSITION_SAMPLES * TRANSITION_BATCHES,
    concurrency: 4,
  });
  // Each refine twice over: answered with the whole history (what a 0.3 send without historyLength gets), and
  // with historyLength 1 (the transition itself: the answer no longer grows with the history).
  const empty = () => ({ latenciesMs: [] as number[], cpuMs: 0, commands: 0, events: 0, n: 0 });
  const acc = { long: empty(), fresh: empty(), longBounded: empty(), freshBounded: empty() };
  for (let b = 0; b < TRANSITION_BATCHES; b++) {
    const ids = {
      long: Array<string>(TRANSITION_SAMPLES).fill(long!.taskId),
      fresh: fresh.slice(b * TRANSITION_SAMPLES, (b + 1) * TRANSITION_SAMPLES).map((t) => t.taskId),
    };
    const runs = [
      ["long", ids.long, undefined],
      ["fresh", ids.fresh, undefined],
      ["longBounded", ids.long, 1],
      ["freshBounded", ids.fresh, 1],
    ] as const;
    for (const [kind, taskIds, historyLength] of runs) {
      const r = await refineBatch(ctx, reader, [...taskIds], historyLength);
      const a = acc[kind];
      a.latenciesMs.push(...r.latenciesMs);
      a.cpuMs += r.cpuMs;
      a.commands += r.commands;
      a.events += r.events;
      a.n += taskIds.length;
    }
  }
  const summary = (a: (typeof acc)["long"]) => ({
    ...latencySummary(a.latenciesMs),
    cpuMsPerTransition: round2(a.cpuMs / a.events),
    storeCommandsPerTransition: round2(a.commands / a.events),
    eventsPerRefine: round2(a.events / a.n),
  });
  const [longFigures, freshFigures, longBounded, freshBounded] = [
    summary(acc.long),
    summary(acc.fresh),
    summary(acc.longBounded),
    summary(acc.freshBounded),
  ];
  return {
    eventsAtStart,
    buildSec,
    longTask: longFigures,
    freshTask: freshFigures,
    cpuRatio: round2(longFigures.cpuMsPerTransition / freshFigures.cpuMsPerTransition),
    historyLength1: {
      longTask: longBounded,
      freshTask: freshBounded,
      cpuRatio: round2(longBounded.cpuMsPerTransition / freshBounded.cpuMsPerTransition),
    },
  };
}
