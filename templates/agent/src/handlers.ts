import { HandlerError, type TaskHandler } from "openwop-a2a-host";

/** Drafts a text from the message. An empty message fails the task with a code the caller sees. */
const draft: TaskHandler = async (ctx) => {
  const text = ctx.input.text.trim();
  if (!text) throw new HandlerError("empty_request", "send a text part saying what to draft");
  return {
    output: { words: text.split(/\s+/).length },
    artifacts: [{ name: "draft", parts: [{ kind: "text", text: `Draft: ${text}` }] }],
  };
};

/** Handlers by name: the `handler:` of each task node in workflows/. */
export const handlers = { draft };
