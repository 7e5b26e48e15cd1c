import type { HandlerContext, HandlerResult, TaskHandler } from "./workflow-types.js";
import { HandlerError } from "./workflow-types.js";

function text(name: string, body: string, description?: string): HandlerResult["artifacts"] {
  return [{ name, description, parts: [{ kind: "text", text: body }] }];
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

/** The conformance fixture's bound for `conformance-cancellable`'s `delayMs`. */
const MAX_CANCELLABLE_DELAY_MS = 60_000;

function latestFeedback(ctx: HandlerContext): string {
  const last = ctx.feedback.at(-1);
  return last ? `\n\nRevised after feedback: ${last}` : "";
}

/** The handlers the built-in workflows use. Deterministic so that a retried node produces the same result. */
export const builtinHandlers: Record<string, TaskHandler> = {
  async echo(ctx) {
    const body = ctx.input.text || JSON.stringify(ctx.input.data);
    return { output: { text: body }, artifacts: text("echo", body) };
  },

  async noop() {
    return { output: {} };
  },

  async "summarize-request"(ctx) {
    const request = ctx.input.text || "(no text given)";
    const body = `Proposal: carry out the request "${request}".${latestFeedback(ctx)}`;
    return { output: { proposal: body }, artifacts: text("proposal", body, "What will be done once approved") };
  },

  async "finalize-request"(ctx) {
    const decision = ctx.outputs["gate"] as { action?: string } | undefined;
    const body = `Done: "${ctx.input.text}" (approved with action ${decision?.action ?? "accept"}).`;
    return { output: { result: body }, artifacts: text("result", body) };
  },

  async "draft-brief"(ctx) {
    const topic = ctx.input.text || "an unnamed product";
    const body = [
      `Campaign brief: ${topic}`,
      "Objective: raise awareness with the primary audience.",
      "Key message: what it does, for whom, and why now.",
      "Timeline: four weeks.",
    ].join("\n") + latestFeedback(ctx);
    return { output: { topic }, artifacts: text("brief", body, "Draft campaign brief") };
  },

  async "plan-channels"(ctx) {
    const channels = Array.isArray(ctx.params["channels"]) ? (ctx.params["channels"] as string[]) : ["email", "social", "blog"];
    const body = channels.map((c, i) => `Week ${i + 1}: ${c}`).join("\n") + latestFeedback(ctx);
    return { output: { channels }, artifacts: text("channel-plan", body, "Channel plan") };
  },

  async "assemble-campaign"(ctx) {
    const topic = (ctx.outputs["draft"] as { topic?: string } | undefined)?.topic ?? ctx.input.text;
    const body = `Campaign for ${topic} is approved and ready to launch.`;
    return { output: { ready: true }, artifacts: text("campaign", body, "Final campaign package") };
  },

  async "compose-with-answer"(ctx) {
    const answers = (ctx.outputs["ask-audience"] as { answers?: Array<{ id: string; answer: unknown }> } | undefined)?.answers ?? [];
    const audience = answers.find((a) => a.id === "audience")?.answer ?? "everyone";
    const body = `Message for ${String(audience)}: ${ctx.input.text || "hello"}`;
    return { output: { audience }, artifacts: text("message", body) };
  },

  /**
   * Runs until cancelled or until `params.ms` (else the run's `delayMs` input, 1-60000 as the conformance
   * fixture defines it, else an hour) passes: for cancellation tests and the cancellable fixture.
   */
  async "wait-until-cancelled"(ctx) {
    const delayMs = ctx.input.data["delayMs"];
    if (delayMs !== undefined && !(Number.isInteger(delayMs) && (delayMs as number) >= 1 && (delayMs as number) <= MAX_CANCELLABLE_DELAY_MS)) {
      throw new HandlerError("validation_error", `inputs.delayMs must be a whole number of milliseconds from 1 to ${MAX_CANCELLABLE_DELAY_MS}`);
    }
    const ms = typeof ctx.params["ms"] === "number" ? ctx.params["ms"] : ((delayMs as number | undefined) ?? 60 * 60 * 1000);
    await sleep(ms, ctx.signal);
    return { output: { waitedMs: ms } };
  },

  async fail(ctx) {
    throw new HandlerError(String(ctx.params["code"] ?? "handler_failed"), String(ctx.params["message"] ?? "the handler failed on purpose"));
  },
};
