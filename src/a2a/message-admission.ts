import { randomUUID } from "node:crypto";
import type { Message, PushNotificationConfig } from "../domain/a2a-types.js";
import { DomainError, invalidParams } from "../domain/errors.js";
import { assertDepth } from "../domain/json-input.js";
import type { CallContext } from "../auth/call-context.js";
import { requireScope } from "../auth/principal.js";
import type { TaskSupervisor } from "../engine/task-supervisor.js";
import type { WorkflowCatalog } from "../engine/workflow-catalog.js";
import type { PushConfigService } from "../push/push-config-service.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import { assertGeneration, generationMismatch, type TaskRecord } from "../domain/task-record.js";
import { DuplicateIdempotencyKeyError } from "../store/task-store.js";
import { assertMessageSize, type TaskSizeLimits } from "../store/task-size-limits.js";
import { isUnknownStoreOutcome, type CallerStoreCalls } from "../store/store-call-budget.js";
import { assertSameRequest, creationSeed, type IdempotencySeed } from "../engine/message-idempotency.js";
import type { HistoryLimit } from "./task-view.js";

/** What a send carries, whatever its binding and version. */
export interface SendParams {
  message: Message;
  /** false = return as soon as the task is committed (0.3 `blocking:false`, 1.0 `returnImmediately`). */
  blocking: boolean;
  history?: HistoryLimit;
  pushNotificationConfig?: PushNotificationConfig;
  metadata?: Record<string, unknown>;
  /** A2A 1.1 draft `ifGenerationMatch`: a reply to an existing task is refused unless it is at this generation (ignored for a new task). */
  ifGenerationMatch?: number;
}

export interface MessageAdmissionOptions {
  supervisor: TaskSupervisor;
  reads: TaskReadPort;
  catalog: WorkflowCatalog;
  push: PushConfigService;
  sizeLimits: TaskSizeLimits;
  maxInputDepth: number;
  /** The service's store calls, bounded by the caller's deadline and STORE_TIMEOUT_MS. */
  storeCalls: CallerStoreCalls;
}

/**
 * A caller's message, taken in: checked (role, size, nesting, scopes, its push config), then a reply to its task or
 * a new task, created once per idempotency key (a repeat answers the task the first one created), its push config
 * stored before the task so the first transition is covered. What the send then waits for is the service's.
 */
export class MessageAdmission {
  constructor(private readonly options: MessageAdmissionOptions) {}

  private get storeCalls(): CallerStoreCalls {
    return this.options.storeCalls;
  }

  /**
   * `firstWriteWithinMs`: a new task may run its pure work before its first write for that long (a blocking
   * send, answered at the end anyway); 0 for a caller answered at once (non-blocking, or a stream's first Task).
   */
  async accept(params: SendParams, ctx: CallContext, firstWriteWithinMs = 0): Promise<TaskRecord> {
    const { message } = params;
    if (message.role !== "user") throw invalidParams(`message.role must be "user" (got "${message.role}")`);
    // Every binding decodes into this call, so the bound holds for binary gRPC as well as JSON.
    assertContentDepth(params, this.options.maxInputDepth);
    const { push } = this.options;
    const pushConfig = params.pushNotificationConfig;
    if (pushConfig) {
      // The push URL is checked before any task is looked up or created.
      push.assertEnabled();
      requireScope(ctx.principal, "webhooks:manage");
      await push.validate(pushConfig, "configuration.pushNotificationConfig");
    }
    const { supervisor, reads } = this.options;
    assertMessageSize(message, this.options.sizeLimits);
    if (message.taskId) {
      requireScope(ctx.principal, "approvals:respond");
      const existing = await this.storeCalls.read(ctx, () => reads.get(message.taskId!, ctx.principal.tenant));
      if (message.contextId && message.contextId !== existing.contextId) {
        throw invalidParams(
          `message.contextId "${message.contextId}" does not match the contextId of task ${existing.taskId}`,
          { taskId: existing.taskId },
        );
      }
      const { ifGenerationMatch } = params;
      // Checked before the push config is written too, so a mismatch changes nothing; the reply checks again under the lock.
      if (ifGenerationMatch !== undefined) assertGeneration(existing, ifGenerationMatch);
      if (pushConfig)
        await this.storeCalls.bounded(ctx, () => push.registerForExistingTask(existing, pushConfig, ctx.principal));
      if (ifGenerationMatch === undefined)
        return this.storeCalls.bounded(ctx, () => supervisor.reply(existing.taskId, message, ctx.principal));
      try {
        return await this.storeCalls.bounded(ctx, () =>
          supervisor.reply(existing.taskId, message, ctx.principal, { ifGeneration: ifGenerationMatch }),
        );
      } catch (err) {
        // Another instance committed between our read and our write (the store's version check): the generation moved.
        if (err instanceof DomainError && err.code === "conflict")
          throw generationMismatch(existing.taskId, ifGenerationMatch, undefined);
        throw err;
      }
    }
    requireScope(ctx.principal, "runs:create");
    const skillId = skillIdOf(message, params.metadata) ?? this.options.catalog.defaultWorkflowId;
    // message.messageId is an idempotency key per caller: a repeat answers the task the first one created.
    // The create itself refuses a repeat (unique index): no lookup before every create.
    const idempotency = creationSeed(ctx.principal, message, skillId);
    const create = {
      workflowId: skillId,
      message,
      ...(message.contextId ? { contextId: message.contextId } : {}),
      principal: ctx.principal,
      idempotency,
      ...(firstWriteWithinMs > 0 ? { firstWriteWithinMs } : {}),
    };
    if (!pushConfig) return this.createOnce(create, ctx);
    // Admitted first (tenant limits, overload), so a refused task writes nothing, its push config included.
    let admitted: () => void;
    try {
      admitted = await this.storeCalls.bounded(ctx, () => supervisor.admit(create));
    } catch (err) {
      return this.repeatOf(create, ctx, err);
    }
    // Stored before the task exists, so its very first transition is covered even if we crash right after.
    const taskId = randomUUID();
    try {
      await this.storeCalls.bounded(ctx, () => push.registerForNewTask(taskId, ctx.principal, pushConfig));
      const record = await this.createOnce({ ...create, taskId, admitted: true }, ctx);
      // A concurrent identical message won the race: its task stands, this registration is dropped.
      if (record.taskId !== taskId) await push.discard(taskId).catch(() => undefined);
      return record;
    } catch (err) {
      // A create the store did not confirm may still commit: its push target stays (the retry finds that task).
      if (isUnknownStoreOutcome(err)) throw err;
      if (!(await reads.find(taskId).catch(() => null))) await push.discard(taskId).catch(() => undefined);
      throw err;
    } finally {
      admitted();
    }
  }

  /** Creates the task, or answers the one a concurrent identical message created (same idempotency key). */
  private async createOnce(
    create: Parameters<TaskSupervisor["createTask"]>[0] & { idempotency: IdempotencySeed },
    ctx: CallContext,
  ): Promise<TaskRecord> {
    try {
      return await this.storeCalls.bounded(ctx, () => this.options.supervisor.createTask(create));
    } catch (err) {
      return this.repeatOf(create, ctx, err);
    }
  }

  /** A create refused as a repeat (same idempotency key): the task the first one created; any other error stands. */
  private async repeatOf(
    create: { message: Message; idempotency: IdempotencySeed },
    ctx: CallContext,
    err: unknown,
  ): Promise<TaskRecord> {
    if (!(err instanceof DuplicateIdempotencyKeyError)) throw err;
    const existing = await this.storeCalls.read(ctx, () =>
      this.options.reads.findByIdempotencyKey(create.idempotency.key),
    );
    if (!existing)
      throw new DomainError(
        "conflict",
        `message ${create.message.messageId} is being processed concurrently; retry the request`,
        { messageId: create.message.messageId },
        { cause: err },
      );
    assertSameRequest(existing, create.idempotency, create.message.messageId);
    return existing;
  }
}

/** The skill a new message asks for: `metadata.skillId` of the message, else of the request. */
export function skillIdOf(message: Message, metadata: Record<string, unknown> | undefined): string | undefined {
  for (const source of [message.metadata, metadata]) {
    const value = source?.["skillId"];
    if (typeof value === "string" && value.length > 0) return value;
  }
  return undefined;
}

/** The caller's free-form JSON in a send (data parts, metadata) nests at most `maxDepth` levels. */
function assertContentDepth(params: SendParams, maxDepth: number): void {
  params.message.parts.forEach((part, i) => {
    if (part.kind === "data") assertDepth(part.data, maxDepth, `message.parts[${i}].data`);
    if (part.metadata) assertDepth(part.metadata, maxDepth, `message.parts[${i}].metadata`);
  });
  if (params.message.metadata) assertDepth(params.message.metadata, maxDepth, "message.metadata");
  if (params.metadata) assertDepth(params.metadata, maxDepth, "metadata");
}
