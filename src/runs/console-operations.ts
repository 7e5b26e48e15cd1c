import { requireScope, type Principal } from "../auth/principal.js";
import type { CallContext } from "../auth/call-context.js";
import type { Artifact, Message } from "../domain/a2a-types.js";
import type { A2ATaskStateValue, RunStatus } from "../domain/run-status.js";
import { DomainError } from "../domain/errors.js";
import type { TaskSupervisor } from "../engine/task-supervisor.js";
import type { TransitionHook } from "../engine/transition-hook.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { InterruptTokenSigner } from "../interrupts/interrupt-tokens.js";
import { exportTaskMachine } from "../machine/machine-export.js";
import type { PendingInterrupt, RunError } from "../machine/task-context.js";
import type { TaskRecord } from "../store/task-store.js";
import { statePathOf } from "./console-state-path.js";
import { toRunEventDoc, type RunEventDoc, type RunEventFeed } from "./run-event-feed.js";
import { interruptTokensFor, readWholeLog } from "./run-interrupts.js";

/** One row of the console's task list (and one message of its live stream). */
export interface ConsoleTaskSummary {
  taskId: string;
  tenant: string;
  contextId: string;
  /** The skill: the workflow the task runs. */
  workflowId: string;
  status: RunStatus;
  a2aState: A2ATaskStateValue;
  version: number;
  createdAt: string;
  updatedAt: string;
}

export interface ConsoleTaskDetail {
  task: ConsoleTaskSummary;
  cursor: string | null;
  interrupt?: PendingInterrupt;
  /** Signed tokens of the pending interrupt; `resolve` only when the operator may respond to approvals. */
  interruptTokens?: { resolve?: string; inspect: string };
  error?: RunError;
  artifacts: Artifact[];
  history: Message[];
  events: RunEventDoc[];
  /** The machine states the task went through, in order (consecutive repeats collapsed). */
  path: string[];
}

export interface ConsoleTaskFilter {
  tenant?: string;
  state?: A2ATaskStateValue;
  contextId?: string;
  workflowId?: string;
  /** A task id or a prefix of one. */
  idPrefix?: string;
}

export interface ConsoleOperationsOptions {
  supervisor: Pick<TaskSupervisor, "cancel">;
  reads: TaskReadPort;
  hook: Pick<TransitionHook, "onAny">;
  feed: RunEventFeed;
  tokens: InterruptTokenSigner;
  /** The tenants the console lists across (those of the configured API keys; "default" with auth off). */
  tenants: readonly string[];
}

const LIST_LIMIT = 100;
export const CONSOLE_SCOPE = "console:operate";

/**
 * What the operator console reads and does, across tenants: operators see every tenant's tasks, and act
 * in a task's own tenant under their own name. Every operation needs the `console:operate` scope; resolving
 * an interrupt goes through the signed-token API, whose resolve token is issued only to a principal that
 * also holds `approvals:respond` (the REST rule).
 */
export class ConsoleOperations {
  constructor(private readonly options: ConsoleOperationsOptions) {}

  machine(ctx: CallContext): Record<string, unknown> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    return exportTaskMachine();
  }

  tenants(ctx: CallContext): readonly string[] {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    return this.options.tenants;
  }

  /** Newest first, at most 100 per tenant. */
  async list(filter: ConsoleTaskFilter, ctx: CallContext): Promise<ConsoleTaskSummary[]> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    const tenants = filter.tenant ? [filter.tenant] : this.options.tenants;
    const pages = await Promise.all(
      tenants.map((tenant) =>
        this.options.reads.list({
          tenant,
          limit: LIST_LIMIT,
          ...(filter.state ? { state: filter.state } : {}),
          ...(filter.contextId ? { contextId: filter.contextId } : {}),
        }),
      ),
    );
    return pages
      .flatMap((page) => page.records)
      .filter((r) => (!filter.workflowId || r.workflowId === filter.workflowId) && (!filter.idPrefix || r.taskId.startsWith(filter.idPrefix)))
      .sort((a, b) => (a.updatedAt === b.updatedAt ? a.taskId.localeCompare(b.taskId) : b.updatedAt.localeCompare(a.updatedAt)))
      .map(summaryOf);
  }

  /** Calls `listener` with the summary of every task after each commit, until the returned function is called. */
  watch(listener: (summary: ConsoleTaskSummary) => void, ctx: CallContext): () => void {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    return this.options.hook.onAny(({ record }) => listener(summaryOf(record)));
  }

  async detail(taskId: string, ctx: CallContext): Promise<ConsoleTaskDetail> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    const { reads, tokens } = this.options;
    const record = await this.find(taskId);
    const context = reads.contextOf(record);
    const events = await readWholeLog(reads, taskId);
    const interruptTokens = interruptTokensFor(tokens, record, context, ctx.principal);
    return {
      task: summaryOf(record),
      cursor: context.cursor,
      ...(context.interrupt ? { interrupt: context.interrupt } : {}),
      ...(interruptTokens ? { interruptTokens } : {}),
      ...(context.error ? { error: context.error } : {}),
      artifacts: context.artifacts,
      history: await reads.historyOf(record),
      events: events.map(toRunEventDoc),
      path: statePathOf(events),
    };
  }

  /** The tenant of a task the console may see (push views and actions run in it). */
  async tenantOf(taskId: string, ctx: CallContext): Promise<string> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    return (await this.find(taskId)).tenant;
  }

  /** The task's event log after `after`, following live commits until the run ends. */
  async events(taskId: string, after: number, ctx: CallContext): Promise<AsyncGenerator<RunEventDoc>> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    const record = await this.find(taskId);
    return this.options.feed.open(taskId, after, { principal: this.actingIn(record, ctx.principal, "runs:read"), ...(ctx.signal ? { signal: ctx.signal } : {}) });
  }

  async cancel(taskId: string, reason: string | undefined, ctx: CallContext): Promise<ConsoleTaskSummary> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    requireScope(ctx.principal, "runs:cancel");
    const record = await this.find(taskId);
    const after = await this.options.supervisor.cancel(taskId, this.actingIn(record, ctx.principal, "runs:cancel"), reason ?? `cancelled from the console by ${ctx.principal.id}`);
    return summaryOf(after);
  }

  // ------------------------------------------------------------------------------------------

  private async find(taskId: string): Promise<TaskRecord> {
    const record = await this.options.reads.find(taskId);
    if (!record || !this.options.tenants.includes(record.tenant)) throw new DomainError("task-not-found", `Task not found: ${taskId}`, { taskId });
    return record;
  }

  /** The operator, acting in the task's tenant with one scope it holds. */
  private actingIn(record: TaskRecord, operator: Principal, scope: "runs:read" | "runs:cancel"): Principal {
    return { tenant: record.tenant, id: operator.id, scopes: [scope] };
  }

}

function summaryOf(record: TaskRecord): ConsoleTaskSummary {
  return {
    taskId: record.taskId,
    tenant: record.tenant,
    contextId: record.contextId,
    workflowId: record.workflowId,
    status: record.status,
    a2aState: record.a2a.state,
    version: record.version,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}
