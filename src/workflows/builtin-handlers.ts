import type { Artifact } from "../domain/a2a-types.js";
import type { HandlerContext, HandlerResult, TaskHandler } from "./workflow-types.js";
import { HandlerError } from "./workflow-types.js";
import { abortableSleep } from "../domain/abortable-sleep.js";

function text(name: string, body: string, description?: string): HandlerResult["artifacts"] {
  return [{ name, description, parts: [{ kind: "text", text: body }] }];
}

/** The conformance fixture's bound for `conformance-cancellable`'s `delayMs`. */
const MAX_CANCELLABLE_DELAY_MS = 60_000;

function latestFeedback(ctx: HandlerContext): string {
  const last = ctx.feedback.at(-1);
  return last ? `\n\nRevised after feedback: ${last}` : "";
}

/** "make it red", "make them bigger": the refine demo's instructions. */
const INSTRUCTION = /^(?:please\s+)?make\s+(?:it|this|that|them)\s+(.+?)[.!]?$/i;

/** The text of an earlier task's picture artifact (else of its first text part). */
function pictureOf(artifacts: readonly Artifact[]): string | undefined {
  const texts = (a: Artifact) => a.parts.flatMap((p) => (p.kind === "text" ? [p.text] : [])).join(" ");
  const picture =
    artifacts.find((a) => a.artifactId === "picture" || a.name === "picture") ?? artifacts.find((a) => texts(a) !== "");
  return picture && texts(picture) !== "" ? texts(picture) : undefined;
}

/** "a boat" + "make it red" = "a red boat"; an instruction of another form is appended. */
function refinePicture(picture: string, instruction: string): string {
  const quality = INSTRUCTION.exec(instruction)?.[1];
  if (!quality) return instruction ? `${picture} (${instruction})` : picture;
  const article = /^(a|an|the)\s+(.*)$/i.exec(picture);
  if (!article) return `${quality} ${picture}`;
  const [, word, rest] = article as unknown as [string, string, string];
  const lead =
    word.toLowerCase() === "the"
      ? word
      : /^[aeiou]/i.test(quality)
        ? word[0] === "A"
          ? "An"
          : "an"
        : word[0] === "A"
          ? "A"
          : "a";
  return `${lead} ${quality} ${rest}`;
}

/**
 * The handlers the built-in workflows use. Deterministic so that a retried node produces the same result,
 * and pure: none acts outside this host (see `TaskHandler.pure`).
 */
const handlers: Record<string, TaskHandler> = {
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
    const body =
      [
        `Campaign brief: ${topic}`,
        "Objective: raise awareness with the primary audience.",
        "Key message: what it does, for whom, and why now.",
        "Timeline: four weeks.",
      ].join("\n") + latestFeedback(ctx);
    return { output: { topic }, artifacts: text("brief", body, "Draft campaign brief") };
  },

  async "plan-channels"(ctx) {
    const channels = Array.isArray(ctx.params["channels"])
      ? (ctx.params["channels"] as string[])
      : ["email", "social", "blog"];
    const body = channels.map((c, i) => `Week ${i + 1}: ${c}`).join("\n") + latestFeedback(ctx);
    return { output: { channels }, artifacts: text("channel-plan", body, "Channel plan") };
  },

  async "assemble-campaign"(ctx) {
    const topic = (ctx.outputs["draft"] as { topic?: string } | undefined)?.topic ?? ctx.input.text;
    const body = `Campaign for ${topic} is approved and ready to launch.`;
    return { output: { ready: true }, artifacts: text("campaign", body, "Final campaign package") };
  },

  async "compose-with-answer"(ctx) {
    const answers =
      (ctx.outputs["ask-audience"] as { answers?: Array<{ id: string; answer: unknown }> } | undefined)?.answers ?? [];
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
    if (
      delayMs !== undefined &&
      !(Number.isInteger(delayMs) && (delayMs as number) >= 1 && (delayMs as number) <= MAX_CANCELLABLE_DELAY_MS)
    ) {
      throw new HandlerError(
        "validation_error",
        `inputs.delayMs must be a whole number of milliseconds from 1 to ${MAX_CANCELLABLE_DELAY_MS}`,
      );
    }
    const ms =
      typeof ctx.params["ms"] === "number" ? ctx.params["ms"] : ((delayMs as number | undefined) ?? 60 * 60 * 1000);
    await abortableSleep(ms, ctx.signal);
    return { output: { waitedMs: ms } };
  },

  /** Artifacts of every part kind: a file by value (base64 bytes), a file by reference (a `data:` URI) and structured data. */
  async "file-and-data-report"(ctx) {
    const subject = ctx.input.text || "(no text given)";
    const words = subject.split(/\s+/).filter(Boolean);
    const csv = `word,length\n${words.map((w) => `${w.replaceAll(",", " ")},${w.length}`).join("\n")}\n`;
    const note = `Report on "${subject}": ${words.length} words.`;
    const summary = {
      subject,
      words: words.length,
      characters: subject.length,
      longestWord: words.reduce((a, w) => (w.length > a.length ? w : a), ""),
    };
    return {
      output: summary,
      artifacts: [
        {
          artifactId: "report.csv",
          name: "report.csv",
          description: "Word lengths as CSV (file bytes)",
          parts: [
            {
              kind: "file",
              file: { bytes: Buffer.from(csv).toString("base64"), mimeType: "text/csv", name: "report.csv" },
            },
          ],
        },
        {
          artifactId: "report-note",
          name: "report-note",
          description: "The note, by reference (file URI)",
          parts: [
            {
              kind: "file",
              file: {
                uri: `data:text/plain;base64,${Buffer.from(note).toString("base64")}`,
                mimeType: "text/plain",
                name: "note.txt",
              },
            },
          ],
        },
        {
          artifactId: "summary",
          name: "summary",
          description: "Counts (data)",
          parts: [{ kind: "data", data: summary }],
        },
      ],
    };
  },

  /** Streams one text artifact in `params.chunks` pieces (`append` after the first, `lastChunk` on the last), `params.delayMs` apart. */
  async "stream-text"(ctx) {
    const body = ctx.input.text || "streamed artifact";
    const count = Math.max(
      1,
      Math.min(typeof ctx.params["chunks"] === "number" ? ctx.params["chunks"] : 4, body.length),
    );
    const delayMs = typeof ctx.params["delayMs"] === "number" ? ctx.params["delayMs"] : 20;
    const size = Math.ceil(body.length / count);
    const pieces = Array.from({ length: count }, (_, i) => body.slice(i * size, (i + 1) * size)).filter(
      (p) => p.length > 0,
    );
    for (const [i, piece] of pieces.entries()) {
      if (i > 0) await abortableSleep(delayMs, ctx.signal);
      await ctx.emitArtifactChunk({
        artifactId: `${ctx.nodeId}.stream`,
        name: "stream",
        parts: [{ kind: "text", text: piece }],
        append: i > 0,
        lastChunk: i === pieces.length - 1,
      });
    }
    return { output: { chunks: pieces.length } };
  },

  /**
   * The refine demo (A2A "life of a task"): a message names a subject ("a boat") and gets a picture of it
   * (a text artifact standing in for an image). A follow-up in the same context whose `referenceTaskIds`
   * names that task, with an instruction ("make it red"), gets the referenced picture with the instruction
   * applied ("a red boat"); without referenceTaskIds, an instruction refines the newest earlier task of the
   * context. The output and the part's metadata name the task refined.
   */
  async "refine-artifact"(ctx) {
    const request = ctx.message.parts
      .flatMap((p) => (p.kind === "text" ? [p.text.trim()] : []))
      .join(" ")
      .trim();
    const referenced = (ctx.message.referenceTaskIds ?? []).length > 0;
    const candidates = referenced
      ? await ctx.referencedTasks()
      : INSTRUCTION.test(request)
        ? await ctx.contextTasks({ limit: 5 })
        : [];
    const source = candidates
      .map((task) => ({ task, picture: pictureOf(task.artifacts) }))
      .find((c) => c.picture !== undefined);
    if (referenced && !source) {
      throw new HandlerError(
        "referenced_task_not_found",
        "none of the tasks in referenceTaskIds can be read here, or none has a picture to refine",
      );
    }
    if (!source) {
      const picture = request || "an empty canvas";
      return {
        output: { picture },
        artifacts: [
          {
            artifactId: "picture",
            name: "picture",
            description: "The picture (as text)",
            parts: [{ kind: "text", text: picture }],
          },
        ],
      };
    }
    const picture = refinePicture(source.picture!, request);
    const refinedFrom = { taskId: source.task.id, contextId: source.task.contextId };
    return {
      output: { picture, instruction: request, refinedFrom },
      artifacts: [
        {
          artifactId: "picture",
          name: "picture",
          description: `The picture of task ${source.task.id}, refined`,
          parts: [{ kind: "text", text: picture, metadata: { refinedFrom } }],
        },
      ],
    };
  },

  async fail(ctx) {
    throw new HandlerError(
      String(ctx.params["code"] ?? "handler_failed"),
      String(ctx.params["message"] ?? "the handler failed on purpose"),
    );
  },
};

export const builtinHandlers: Record<string, TaskHandler> = Object.fromEntries(
  Object.entries(handlers).map(([name, handler]) => [name, Object.assign(handler, { pure: true })]),
);
