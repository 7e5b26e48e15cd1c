// The closed-loop load generator, its own process: `concurrency` callers, each sending its next blocking
// message/send as soon as the previous one answered, until the round's time is up. The same code drives
// every server and binding. It also holds the SSE subscribers of the stream figures (bench/load/streams.ts).
import { selfUsage, serveIpc } from "../lib/ipc.js";
import { createSender, type Protocol, type SendOp } from "./protocols.js";
import { closeStreams, openStreams, streamReceipts } from "./streams.js";

export interface RoundSpec {
  baseUrl: string;
  /** Several instances of one service: each call goes to the next one in turn (round robin); else `baseUrl`. */
  baseUrls?: string[];
  protocol: Protocol;
  concurrency: number;
  durationMs: number;
  skill: string;
  /** The state each answer must be in (a different one counts as an error). */
  expectState: string;
}

export interface RoundResult {
  count: number;
  errors: number;
  firstError?: string;
  elapsedMs: number;
  /** Latency of every successful call, ms, unsorted. */
  latenciesMs: number[];
  /** The load generator's own CPU time during the round. */
  cpuMs: number;
}

async function round(spec: RoundSpec): Promise<RoundResult> {
  const senders = (spec.baseUrls ?? [spec.baseUrl]).map((url) => createSender(url, spec.protocol, spec.concurrency));
  let turn = 0;
  const latenciesMs: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const cpuBefore = selfUsage().cpuMs;
  const started = performance.now();
  const deadline = started + spec.durationMs;
  const op: SendOp = { skill: spec.skill, text: "bench" };
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        try {
          const { state } = await senders[turn++ % senders.length]!.send(op);
          if (state !== spec.expectState) throw new Error(`task ended ${state}, expected ${spec.expectState}`);
          latenciesMs.push(performance.now() - t0);
        } catch (err) {
          errors++;
          firstError ??= err instanceof Error ? err.message : String(err);
          // A server that fails at once must not turn the round into a busy loop.
          if (errors > 100 && errors > latenciesMs.length) break;
        }
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  await Promise.all(senders.map((sender) => sender.close()));
  return {
    count: latenciesMs.length,
    errors,
    ...(firstError ? { firstError } : {}),
    elapsedMs,
    latenciesMs,
    cpuMs: selfUsage().cpuMs - cpuBefore,
  };
}

/** Sends these operations one after another; the latency of each (ms) and the answers. */
async function sequence(args: {
  baseUrl: string;
  protocol: Protocol;
  ops: SendOp[];
}): Promise<{ latenciesMs: number[]; results: Array<{ taskId: string; state: string }> }> {
  const sender = createSender(args.baseUrl, args.protocol, 1);
  const latenciesMs: number[] = [];
  const results = [];
  for (const op of args.ops) {
    const t0 = performance.now();
    results.push(await sender.send(op));
    latenciesMs.push(performance.now() - t0);
  }
  await sender.close();
  return { latenciesMs, results };
}

/** Creates `count` tasks, `concurrency` at a time; their ids and states. */
async function createTasks(args: {
  baseUrl: string;
  skill: string;
  count: number;
  concurrency: number;
  blocking?: boolean;
}): Promise<Array<{ taskId: string; state: string }>> {
  const sender = createSender(args.baseUrl, "jsonrpc", args.concurrency);
  const out: Array<{ taskId: string; state: string }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(args.concurrency, args.count) }, async () => {
      while (next < args.count) {
        next++;
        out.push(await sender.send({ skill: args.skill, text: "bench", blocking: args.blocking !== false }));
      }
    }),
  );
  await sender.close();
  return out;
}

serveIpc({ round, sequence, createTasks, openStreams, streamReceipts, closeStreams }, {});
