// A HANDLERS_MODULE for the noisy-neighbour bench (bench/noisy-neighbour.ts): `bench-work` waits `params.ms`,
// as a handler waiting on a downstream does, and is not pure, so its node.started is written before it runs and
// its run is admitted by the fair queue like any handler with effects.
import type { TaskHandler } from "../../src/workflows/workflow-types.js";

const benchWork: TaskHandler = async (ctx) => {
  const ms = typeof ctx.params["ms"] === "number" ? ctx.params["ms"] : 0;
  await new Promise((resolve) => setTimeout(resolve, ms));
  return { output: { waitedMs: ms } };
};

export const handlers = { "bench-work": benchWork };
