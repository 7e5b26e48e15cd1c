import { invalidParams } from "../../../domain/errors.js";
import { nodeAfter } from "../../workflow-walk.js";
import type { ClarificationNode, WorkflowDefinition } from "../../../workflows/workflow-types.js";
import type { EngineNodeKind } from "../node-kind.js";
import { gateNodeExecutor } from "./gate-node.js";

/** `clarification` nodes: a gate that asks the caller questions and resumes with their answers. */
export const clarificationNodeKind: EngineNodeKind<ClarificationNode> = {
  reply: {
    byNodeId: true,
    interpret: ({ node, workflow, resumeValue, decision }) => ({
      type: "resume",
      ...clarificationOutcome(node, workflow, resumeValue, decision),
    }),
    // Plain text answers a single question.
    fromText(text, node) {
      if (node.questions.length === 1 && node.questions[0])
        return { answers: [{ id: node.questions[0].id, answer: text }] };
      throw invalidParams(
        `node "${node.id}" asks several questions; answer with a data part {"answers": [{"id", "answer"}]}`,
      );
    },
  },
  executor: (runtime) => gateNodeExecutor(runtime),
  view: { title: (node) => node.questions[0]?.question ?? node.id },
};

function clarificationOutcome(
  node: ClarificationNode,
  workflow: WorkflowDefinition,
  resumeValue: Record<string, unknown>,
  decision: { decidedBy: string; decidedAt: string },
): { output: Record<string, unknown>; next: string | null } {
  const raw = resumeValue["answers"];
  if (!Array.isArray(raw))
    throw invalidParams(`the reply to "${node.id}" needs "answers": [{"id", "answer"}] (or a text reply)`);
  const known = new Set(node.questions.map((q) => q.id));
  const answers = raw.map((a: unknown, i) => {
    if (!a || typeof a !== "object" || typeof (a as { id?: unknown }).id !== "string" || !("answer" in a)) {
      throw invalidParams(`answers[${i}] must be {"id": string, "answer": value}`);
    }
    const { id, answer } = a as { id: string; answer: unknown };
    if (!known.has(id))
      throw invalidParams(
        `answers[${i}].id "${id}" is not a question of "${node.id}" (questions: ${[...known].join(", ")})`,
      );
    return { id, answer };
  });
  const missing = node.questions.filter((q) => q.required !== false && !answers.some((a) => a.id === q.id));
  if (missing.length > 0) throw invalidParams(`missing answers for: ${missing.map((q) => q.id).join(", ")}`);
  return {
    output: { answers, answeredBy: decision.decidedBy, answeredAt: decision.decidedAt },
    next: nodeAfter(workflow, node.id),
  };
}
