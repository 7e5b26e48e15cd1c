import { randomUUID } from "node:crypto";
import type { Artifact, Message, Part } from "../domain/a2a-types.js";
import type { Logger } from "../observability/logger.js";
import { withConversation, type ConversationReads, type HandlerContextBase } from "./handler-conversation.js";
import { callerFailure } from "./handler-failure.js";
import { cursorOf, inputOfMessage, switchTarget } from "./message-route.js";
import { firstNodeOf, nodeAfter } from "./workflow-walk.js";
import { HandlerError, type HandlerResult, type TaskHandler, type WorkflowDefinition } from "../workflows/workflow-types.js";

/** A loop of switch and task nodes that never ends is cut off here (a stateless answer must be quick). */
const MAX_STEPS = 100;

/**
 * Answers a message for a stateless skill (`stateless: true`): its task and switch nodes run at once, in
 * this process, and their artifacts' parts (streamed chunks included) become one agent Message. Nothing is
 * stored and no task exists, so there is nothing to get, cancel or resubscribe to; a repeated message runs
 * again (the built-in handlers are deterministic).
 */
export class StatelessSkills {
  /** `reads`: what handlers may read of the caller's tenant's tasks (HandlerContext `referencedTasks`, `contextTasks`). */
  constructor(private readonly options: { handlers: Record<string, TaskHandler>; logger: Logger; reads: ConversationReads }) {}

  /** `tenant`: the caller's, whose tasks handlers may read. */
  async answer(workflow: WorkflowDefinition, message: Message, signal: AbortSignal, tenant: string): Promise<Message> {
    const artifacts: Artifact[] = [];
    const outputs: Record<string, unknown> = {};
    const input = inputOfMessage(message);
    // Handlers see the contextId the answer will carry (a new one when the message names none).
    const contextId = message.contextId ?? randomUUID();
    const replyTo: Message = { ...message, contextId };
    const runId = `message:${message.messageId}`;
    let cursor = firstNodeOf(workflow);
    let lastOutput: unknown;
    for (let steps = 0; cursor !== null; steps++) {
      const node = workflow.nodes.find((n) => n.id === cursor);
      if (!node || steps >= MAX_STEPS) return this.failed(workflow, replyTo, "workflow_invalid", node ? `more than ${MAX_STEPS} steps` : `node "${cursor}" is not in workflow ${workflow.id}`);
      if (node.kind === "switch") {
        const { target } = switchTarget(node, message);
        cursor = target === undefined ? nodeAfter(workflow, node.id) : cursorOf(target);
        continue;
      }
      if (node.kind !== "task") return this.failed(workflow, replyTo, "workflow_invalid", `a stateless skill cannot run "${node.kind}" nodes`);
      const handler = this.options.handlers[node.handler];
      let result: HandlerResult;
      try {
        if (!handler) throw new HandlerError("handler_missing", `no handler named "${node.handler}" is registered`);
        const base: HandlerContextBase = {
          taskId: runId,
          runId,
          nodeId: node.id,
          idempotencyKey: `${runId}:${node.id}`,
          attempt: 1,
          params: node.params ?? {},
          input,
          outputs,
          feedback: [],
          signal,
          emitArtifactChunk: async (chunk) => {
            const existing = artifacts.find((a) => a.artifactId === chunk.artifactId);
            if (existing && chunk.append) existing.parts.push(...chunk.parts);
            else artifacts.push({ artifactId: chunk.artifactId, ...(chunk.name ? { name: chunk.name } : {}), parts: [...chunk.parts] });
          },
        };
        result = await handler(withConversation(base, this.options.reads, { tenant, contextId, message }));
      } catch (err) {
        const failure = callerFailure(err, this.options.logger, { skillId: workflow.id, nodeId: node.id }, `handler "${node.handler}"`);
        return this.failed(workflow, replyTo, failure.code, failure.message);
      }
      outputs[node.id] = result.output ?? null;
      lastOutput = result.output;
      for (const [i, a] of (result.artifacts ?? []).entries()) artifacts.push({ artifactId: a.artifactId ?? `${node.id}.${i}`, name: a.name, parts: a.parts });
      cursor = nodeAfter(workflow, node.id);
    }
    const parts: Part[] = artifacts.flatMap((a) => a.parts);
    if (parts.length === 0 && isObject(lastOutput)) parts.push({ kind: "data", data: lastOutput });
    return this.reply(workflow, replyTo, parts.length > 0 ? parts : [{ kind: "text", text: "" }]);
  }

  /** A handler failure answers a Message too (there is no task to fail), saying so in text and metadata. */
  private failed(workflow: WorkflowDefinition, message: Message, code: string, detail: string): Message {
    return this.reply(workflow, message, [{ kind: "text", text: `The skill failed (${code}).` }], { error: { code, message: detail } });
  }

  private reply(workflow: WorkflowDefinition, message: Message, parts: Part[], extra: Record<string, unknown> = {}): Message {
    return {
      messageId: randomUUID(),
      role: "agent",
      parts,
      contextId: message.contextId ?? randomUUID(),
      metadata: { openwop: { skillId: workflow.id, stateless: true, ...extra } },
    };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
