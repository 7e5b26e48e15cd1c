import { randomUUID } from "node:crypto";
import type { Artifact, Message, Part } from "../domain/a2a-types.js";
import type { Logger } from "../observability/logger.js";
import type { ConversationReads } from "./handler-conversation.js";
import { inputOfMessage } from "./message-route.js";
import { builtinNodeKinds, type NodeKindRegistry } from "./nodes/node-registry.js";
import { firstNodeOf } from "./workflow-walk.js";
import type { ArtifactChunk, TaskHandler, WorkflowDefinition } from "../workflows/workflow-types.js";

/** A loop of switch and task nodes that never ends is cut off here (a stateless answer must be quick). */
const MAX_STEPS = 100;

/**
 * Answers a message for a stateless skill (`stateless: true`): its task and switch nodes run at once, in
 * this process, and their artifacts' parts (streamed chunks included) become one agent Message. Nothing is
 * stored and no task exists, so there is nothing to get, cancel or resubscribe to; a repeated message runs
 * again (the built-in handlers are deterministic).
 */
export class StatelessSkills {
  /** `kinds`: the host's node kinds, which run the nodes (the built-in ones by default). `reads`: what handlers may read of the caller's tenant's tasks (HandlerContext `referencedTasks`, `contextTasks`). */
  constructor(
    private readonly options: {
      handlers: Record<string, TaskHandler>;
      logger: Logger;
      reads: ConversationReads;
      kinds?: NodeKindRegistry;
    },
  ) {}

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
    const run = {
      workflow,
      message,
      runId,
      tenant,
      contextId,
      input,
      outputs,
      signal,
      handlers: this.options.handlers,
      reads: this.options.reads,
      logger: this.options.logger,
      emitArtifactChunk: async (chunk: ArtifactChunk) => {
        const existing = artifacts.find((a) => a.artifactId === chunk.artifactId);
        if (existing && chunk.append) existing.parts.push(...chunk.parts);
        else
          artifacts.push({
            artifactId: chunk.artifactId,
            ...(chunk.name ? { name: chunk.name } : {}),
            parts: [...chunk.parts],
          });
      },
    };
    for (let steps = 0; cursor !== null; steps++) {
      const node = workflow.nodes.find((n) => n.id === cursor);
      if (!node || steps >= MAX_STEPS)
        return this.failed(
          workflow,
          replyTo,
          "workflow_invalid",
          node ? `more than ${MAX_STEPS} steps` : `node "${cursor}" is not in workflow ${workflow.id}`,
        );
      // The node's kind runs it (engine/nodes/: task and switch); a kind without a stateless runner cannot be here.
      const runner = (this.options.kinds ?? builtinNodeKinds()).of(node.kind)?.stateless;
      if (!runner)
        return this.failed(workflow, replyTo, "workflow_invalid", `a stateless skill cannot run "${node.kind}" nodes`);
      const step = await runner.run(node as never, run);
      if ("failure" in step) return this.failed(workflow, replyTo, step.failure.code, step.failure.message);
      if (step.result) {
        outputs[node.id] = step.result.output ?? null;
        lastOutput = step.result.output;
        for (const [i, a] of (step.result.artifacts ?? []).entries())
          artifacts.push({ artifactId: a.artifactId ?? `${node.id}.${i}`, name: a.name, parts: a.parts });
      }
      cursor = step.next;
    }
    const parts: Part[] = artifacts.flatMap((a) => a.parts);
    if (parts.length === 0 && isObject(lastOutput)) parts.push({ kind: "data", data: lastOutput });
    return this.reply(workflow, replyTo, parts.length > 0 ? parts : [{ kind: "text", text: "" }]);
  }

  /** A handler failure answers a Message too (there is no task to fail), saying so in text and metadata. */
  private failed(workflow: WorkflowDefinition, message: Message, code: string, detail: string): Message {
    return this.reply(workflow, message, [{ kind: "text", text: `The skill failed (${code}).` }], {
      error: { code, message: detail },
    });
  }

  private reply(
    workflow: WorkflowDefinition,
    message: Message,
    parts: Part[],
    extra: Record<string, unknown> = {},
  ): Message {
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
