import { requireScope, type Principal, type Scope } from "../auth/principal.js";
import type { CallContext } from "../auth/call-context.js";
import type { Artifact, Message } from "../domain/a2a-types.js";
import type { A2ATaskStateValue, RunStatus } from "../domain/run-status.js";
import { DomainError, invalidParams, taskNotFound } from "../domain/errors.js";
import type { TaskSupervisor } from "../engine/task-supervisor.js";
import type { CommitBus } from "../store/commit-bus.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { InterruptTokenSigner } from "../interrupts/interrupt-tokens.js";
import { exportTaskMachine } from "../machine/machine-export.js";
import type { PendingInterrupt, RunError } from "../machine/task-context.js";
import type { TaskRecord } from "../domain/task-record.js";
import { CONSOLE_SCOPE, type ConsoleAccess } from "./console-access.js";
import { statePathOf } from "./console-state-path.js";
import { toRunEventDoc, type RunEventDoc, type RunEventFeed } from "../runs/run-event-feed.js";
import { interruptTokensFor, readWholeLog, type RunInterrupts } from "../runs/run-interrupts.js";
import type { WorkflowCatalog } from "../engine/workflow-catalog.js";
import type { TaskContext } from "../machine/task-context.js";
import type { TaskListQuery } from "../store/task-store.js";
import { CallerStoreCalls, isUnknownStoreOutcome, storeCallError } from "../store/store-call-budget.js";
import { decodeCursor, encodeCursor, filterDigest } from "./console-cursor.js";
import {
  interruptFormOf,
  nodePathOf,
  nodeRef,
  redactSecrets,
  remoteTasksOf,
  titleOf,
  waitingForOf,
  type ConsoleInterruptForm,
  type ConsoleNodeRef,
  type ConsoleWaitingFor,
} from "./console-task-view.js";
import { workflowView, type ConsoleWorkflowView } from "./console-versions.js";

/** One row of the console's task list (and one message of its live stream). */
export interface ConsoleTaskSummary {
  taskId: string;
  tenant: string;
  contextId: string;
  /** The skill: the workflow the task runs, and the version of it the task walks (absent on older tasks). */
  workflowId: string;
  workflowVersion?: string;
  /** A node this instance lacks what it needs for holds the task until an instance that has it takes it. */
  blocked?: { nodeId: string; reason: string; at: string };
  status: RunStatus;
  a2aState: A2ATaskStateValue;
  version: number;
  createdAt: string;
  updatedAt: string;
  /** A title a person can read: the skill's name and the request's first line, or one the workflow set. */
  title: string;
  /** Milliseconds since the task was created, as of this answer. */
  ageMs: number;
  /** The node that runs next or is running (null once the workflow has no more nodes). */
  currentNode: ConsoleNodeRef | null;
  /** Whom the task waits for: an approver, an answer, a peer agent, a timer. Absent when it waits for no one. */
  waitingFor?: ConsoleWaitingFor;
}

/** One page of the console's task list. */
export interface ConsoleTaskPage {
  tenants: readonly string[];
  tasks: ConsoleTaskSummary[];
  /** Pass back as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
  /** First page only: tasks matching every filter (all pages). */
  total?: number;
  /** First page only: tasks matching every filter but `state`, per A2A state. */
  counts?: Partial<Record<A2ATaskStateValue, number>>;
}

export interface ConsoleBulkResult {
  taskId: string;
  ok: boolean;
  /** Cancel: the task's summary after the cancel was accepted. */
  task?: ConsoleTaskSummary;
  /** Retry pushes: the configs whose wait was dropped. */
  retried?: string[];
  error?: { code: string; message: string };
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
  /** The workflow node the task is at (as in the summary). */
  currentNode: ConsoleNodeRef | null;
  /** The workflow nodes the task entered, in order (a refine loop enters one again). */
  nodePath: string[];
  /** The peer task of each a2a.invoke node that has one. */
  remote: Record<string, { peerTaskId: string; agent: string; peerState?: string }>;
  /** The pending interrupt as a form: labelled questions, or the approval's actions and the artifacts under review. */
  interruptForm?: ConsoleInterruptForm;
}

export interface ConsoleTaskFilter {
  tenant?: string;
  state?: A2ATaskStateValue;
  contextId?: string;
  workflowId?: string;
  /** A task id or a prefix of one. */
  idPrefix?: string;
  /** ISO instants: created at or after `createdFrom` and before `createdTo`; the same for the last update. */
  createdFrom?: string;
  createdTo?: string;
  updatedFrom?: string;
  updatedTo?: string;
}

export interface ConsolePageRequest {
  limit: number;
  cursor?: string;
}

export interface ConsoleOperationsOptions {
  supervisor: Pick<TaskSupervisor, "cancel" | "steering" | "versions">;
  reads: TaskReadPort;
  /** This instance's commits (the commit bus): the task list's live updates. */
  commits: Pick<CommitBus, "onAny">;
  feed: RunEventFeed;
  tokens: InterruptTokenSigner;
  /** Which tenants a caller sees: its own, or every configured tenant with `console:all-tenants`. */
  access: ConsoleAccess;
  /** The workflows (skills): names for titles, nodes for the graph. */
  catalog: Pick<WorkflowCatalog, "get" | "kinds">;
  /** Answers an interrupt as the operator (so the log says who decided). */
  interrupts: Pick<RunInterrupts, "resolveAtNode">;
  /** STORE_TIMEOUT_MS: the longest a console call waits for one store operation (a caller's deadline may cut it shorter). */
  storeTimeoutMs: number;
  now?: () => number;
}

/** The most tasks one bulk action takes. */
export const BULK_MAX = 200;
export { CONSOLE_SCOPE };

/**
 * What the operator console reads and does, tenant-scoped like every other surface: a key sees and acts on
 * its own tenant's tasks; one that also holds `console:all-tenants` sees every configured tenant and acts in
 * a task's own tenant under its own name. A task outside the caller's tenants is not found, exactly like an
 * unknown id. Every operation needs the `console:operate` scope. An interrupt is answered as the operator
 * (`resolve`, needs `approvals:respond`, so the log names who decided) or, for a peer agent's question, through
 * the signed-token API, whose resolve token is issued only to a principal that also holds `approvals:respond`
 * (the REST rule), and only with a detail the caller may read. Every store call is bounded like on every other
 * surface (STORE_TIMEOUT_MS, or the caller's deadline): a store down or stalled answers `unavailable` (503 +
 * Retry-After) or `deadline-exceeded` there, never an internal error after the driver's own timeouts.
 */
export class ConsoleOperations {
  /** Store calls bounded by the caller's deadline and STORE_TIMEOUT_MS. */
  private readonly storeCalls: CallerStoreCalls;

  constructor(private readonly options: ConsoleOperationsOptions) {
    this.storeCalls = new CallerStoreCalls(options.storeTimeoutMs);
  }

  machine(ctx: CallContext): Record<string, unknown> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    return exportTaskMachine();
  }

  /**
   * One page of the tasks the caller may see, newest update first (then task id), over any number of tasks:
   * a keyset cursor (the last row's updatedAt and id, bound to the filters) names where the next page starts,
   * so commits made while paging never repeat a row; a task updated meanwhile moves to the top (the live
   * stream brings it there). Each visible tenant is read with its own indexed query and the pages merged.
   */
  async list(filter: ConsoleTaskFilter, page: ConsolePageRequest, ctx: CallContext): Promise<ConsoleTaskPage> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    const visible = this.options.access.tenantsFor(ctx.principal);
    // A tenant the caller may not see lists nothing, like a tenant without tasks.
    const tenants = filter.tenant ? visible.filter((t) => t === filter.tenant) : visible;
    const digest = filterDigest({ ...filter });
    const after = page.cursor ? decodeCursor(page.cursor, digest) : undefined;
    const query: Omit<TaskListQuery, "tenant" | "limit"> = {
      ...(filter.state ? { state: filter.state } : {}),
      ...(filter.contextId ? { contextId: filter.contextId } : {}),
      ...(filter.workflowId ? { workflowId: filter.workflowId } : {}),
      ...(filter.idPrefix ? { idPrefix: filter.idPrefix } : {}),
      ...(filter.createdFrom ? { createdAtOrAfter: filter.createdFrom } : {}),
      ...(filter.createdTo ? { createdBefore: filter.createdTo } : {}),
      ...(filter.updatedFrom ? { updatedAtOrAfter: filter.updatedFrom } : {}),
      ...(filter.updatedTo ? { updatedBefore: filter.updatedTo } : {}),
      // The first page counts (total, per state); the next ones only read their rows.
      ...(after ? { after, countTotal: false } : { countStates: true }),
    };
    const reads = this.options.reads;
    const pages = await this.storeCalls.read(ctx, () =>
      Promise.all(tenants.map((tenant) => reads.list({ tenant, ...query, limit: page.limit + 1 }))),
    );
    const merged = pages
      .flatMap((p) => p.records)
      .sort((a, b) =>
        a.updatedAt === b.updatedAt
          ? a.taskId < b.taskId
            ? 1
            : a.taskId > b.taskId
              ? -1
              : 0
          : a.updatedAt < b.updatedAt
            ? 1
            : -1,
      );
    const records = merged.slice(0, page.limit);
    const last = records.at(-1);
    const counts: Partial<Record<A2ATaskStateValue, number>> = {};
    for (const p of pages)
      for (const [state, n] of Object.entries(p.states ?? {}))
        counts[state as A2ATaskStateValue] = (counts[state as A2ATaskStateValue] ?? 0) + n;
    return {
      tenants: visible,
      tasks: records.map((r) => this.summaryOf(r)),
      nextCursor:
        merged.length > page.limit && last
          ? encodeCursor({ updatedAt: last.updatedAt, taskId: last.taskId }, digest)
          : null,
      ...(after ? {} : { total: pages.reduce((sum, p) => sum + p.total, 0), counts }),
    };
  }

  /** The graph of a workflow (skill) as `version` (default: the deployed one) has it, and its versions in use. */
  async workflow(skillId: string, ctx: CallContext, version?: string): Promise<ConsoleWorkflowView> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    return this.storeCalls.read(ctx, () => workflowView(this.options.supervisor.versions, skillId, version));
  }

  /** Calls `listener` with the summary of every task the caller may see after each commit, until the returned function is called. */
  watch(listener: (summary: ConsoleTaskSummary) => void, ctx: CallContext): () => void {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    const visible = new Set(this.options.access.tenantsFor(ctx.principal));
    return this.options.commits.onAny(({ record }) => {
      if (visible.has(record.tenant)) listener(this.summaryOf(record));
    });
  }

  async detail(taskId: string, ctx: CallContext): Promise<ConsoleTaskDetail> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    const { reads, tokens } = this.options;
    const record = await this.find(taskId, ctx);
    const context = reads.contextOf(record);
    const [events, history] = await this.storeCalls.read(ctx, () =>
      Promise.all([readWholeLog(reads, taskId), reads.historyOf(record)]),
    );
    const interruptTokens = interruptTokensFor(tokens, record, context, ctx.principal);
    const workflow = (await this.options.supervisor.versions.ofTask(record).catch(() => undefined))?.workflow;
    const summary = this.summaryOf(record, context);
    const interruptForm = record.status.startsWith("waiting-")
      ? interruptFormOf(context, workflow, this.options.catalog.kinds)
      : undefined;
    return {
      task: summary,
      cursor: context.cursor,
      ...(context.interrupt ? { interrupt: context.interrupt } : {}),
      ...(interruptTokens ? { interruptTokens } : {}),
      ...(context.error ? { error: context.error } : {}),
      artifacts: context.artifacts,
      history,
      events: events.map((e) => redactedDoc(toRunEventDoc(e))),
      path: statePathOf(events),
      currentNode: summary.currentNode,
      nodePath: nodePathOf(events),
      remote: remoteTasksOf(events),
      ...(interruptForm ? { interruptForm } : {}),
    };
  }

  /** The tenant of a task the console may see (push views and actions run in it). */
  async tenantOf(taskId: string, ctx: CallContext): Promise<string> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    return (await this.find(taskId, ctx)).tenant;
  }

  /**
   * The task's event log after `after`, following live commits until the run ends. Opening it is bounded like
   * any read (an error answer, before the stream starts); a store failure once it streams ends it with an
   * `unavailable` error event, not an internal one.
   */
  async events(taskId: string, after: number, ctx: CallContext): Promise<AsyncGenerator<RunEventDoc>> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    const record = await this.find(taskId, ctx);
    const principal = this.actingIn(record, ctx.principal, "runs:read");
    const docs = await this.storeCalls.bounded(ctx, () =>
      this.options.feed.open(taskId, after, { principal, ...(ctx.signal ? { signal: ctx.signal } : {}) }),
    );
    return (async function* redacted() {
      try {
        for await (const doc of docs) yield redactedDoc(doc);
      } catch (err) {
        throw storeCallError(err);
      }
    })();
  }

  async cancel(taskId: string, reason: string | undefined, ctx: CallContext): Promise<ConsoleTaskSummary> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    requireScope(ctx.principal, "runs:cancel");
    const record = await this.find(taskId, ctx);
    const acting = this.actingIn(record, ctx.principal, "runs:cancel");
    // Waited for within the budget, not cancelled: a cancel the caller stopped waiting for may still commit.
    const after = await this.storeCalls.bounded(ctx, () =>
      this.options.supervisor.cancel(taskId, acting, reason ?? `cancelled from the console by ${ctx.principal.id}`),
    );
    return this.summaryOf(after);
  }

  /**
   * Answers the task's pending interrupt at `nodeId` (approval or clarification) as the operator, acting in
   * the task's tenant: the log records the operator's id as the one who decided. Needs `approvals:respond`.
   */
  async resolve(
    taskId: string,
    nodeId: string,
    resumeValue: Record<string, unknown>,
    ctx: CallContext,
  ): Promise<ConsoleTaskSummary> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    requireScope(ctx.principal, "approvals:respond");
    const record = await this.find(taskId, ctx);
    const operator: Principal = { tenant: record.tenant, id: ctx.principal.id, scopes: ["approvals:respond"] };
    const after = await this.storeCalls.bounded(ctx, () =>
      this.options.interrupts.resolveAtNode(taskId, nodeId, resumeValue, { ...ctx, principal: operator }),
    );
    return this.summaryOf(after);
  }

  /**
   * A steering action (console-steering.ts) as the operator, acting in the task's tenant with the scopes the
   * action needs: the log records the operator's id.
   */
  async steer(
    taskId: string,
    scopes: readonly Scope[],
    ctx: CallContext,
    act: (steering: TaskSupervisor["steering"], acting: Principal) => Promise<TaskRecord>,
  ): Promise<ConsoleTaskSummary> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    for (const scope of scopes) requireScope(ctx.principal, scope);
    const record = await this.find(taskId, ctx);
    const acting: Principal = { tenant: record.tenant, id: ctx.principal.id, scopes: [...scopes] };
    return this.summaryOf(await this.storeCalls.bounded(ctx, () => act(this.options.supervisor.steering, acting)));
  }

  /**
   * Cancels each of `taskIds` as `cancel` does (the same scopes, the same tenant rule), one at a time; one
   * task's failure (not found, already ended) is its own result and stops nothing.
   */
  async cancelMany(taskIds: string[], reason: string | undefined, ctx: CallContext): Promise<ConsoleBulkResult[]> {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    requireScope(ctx.principal, "runs:cancel");
    return eachTask(taskIds, async (taskId) => ({ task: await this.cancel(taskId, reason, ctx) }));
  }

  // ------------------------------------------------------------------------------------------

  private summaryOf(record: TaskRecord, known?: TaskContext): ConsoleTaskSummary {
    const workflow = this.options.supervisor.versions.known(record);
    let context: TaskContext | undefined = known;
    try {
      context ??= this.options.reads.contextOf(record);
    } catch {
      context = undefined; // a snapshot this version cannot read: the row still shows what the record says
    }
    const waitingFor = context ? waitingForOf(record.status, context, workflow, this.options.catalog.kinds) : undefined;
    const now = this.options.now?.() ?? Date.now();
    return {
      taskId: record.taskId,
      tenant: record.tenant,
      contextId: record.contextId,
      workflowId: record.workflowId,
      ...(record.workflowVersion !== undefined ? { workflowVersion: record.workflowVersion } : {}),
      ...(context?.blocked && record.status === "running" ? { blocked: blockedView(context.blocked) } : {}),
      status: record.status,
      a2aState: record.a2a.state,
      version: record.version,
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
      title: context ? titleOf(context, workflow) : (workflow?.name ?? record.workflowId),
      ageMs: Math.max(0, now - Date.parse(record.createdAt)),
      currentNode: context ? nodeRef(workflow, context.cursor, this.options.catalog.kinds) : null,
      ...(waitingFor ? { waitingFor } : {}),
    };
  }

  /** The task when the caller may see its tenant; otherwise the very not-found of an unknown id. */
  private async find(taskId: string, ctx: CallContext): Promise<TaskRecord> {
    const record = await this.storeCalls.read(ctx, () => this.options.reads.find(taskId));
    if (!record || !this.options.access.canSee(ctx.principal, record.tenant)) throw taskNotFound(taskId);
    return record;
  }

  /** The operator, acting in the task's tenant with one scope it holds. */
  private actingIn(record: TaskRecord, operator: Principal, scope: "runs:read" | "runs:cancel"): Principal {
    return { tenant: record.tenant, id: operator.id, scopes: [scope] };
  }
}

/**
 * Runs `action` for each distinct id, in order; a DomainError becomes that task's result. The store out of
 * reach (unavailable, deadline-exceeded) ends the whole action with that answer instead (503 + Retry-After):
 * every later task would wait out the same budget, one after the other. Tasks done before it stay done; a
 * retry of the action reports each of them on its own and does the rest.
 */
export async function eachTask(
  taskIds: string[],
  action: (taskId: string) => Promise<Omit<ConsoleBulkResult, "taskId" | "ok">>,
): Promise<ConsoleBulkResult[]> {
  const results: ConsoleBulkResult[] = [];
  for (const taskId of [...new Set(taskIds)]) {
    try {
      results.push({ taskId, ok: true, ...(await action(taskId)) });
    } catch (err) {
      if (!(err instanceof DomainError) || err.code === "internal" || isUnknownStoreOutcome(err)) throw err;
      results.push({ taskId, ok: false, error: { code: err.code, message: err.message } });
    }
  }
  return results;
}

/** The ids of a bulk request: 1 to BULK_MAX task ids. */
export function bulkTaskIds(raw: unknown): string[] {
  if (
    !Array.isArray(raw) ||
    raw.length === 0 ||
    raw.length > BULK_MAX ||
    !raw.every((id) => typeof id === "string" && id.length > 0 && id.length <= 200)
  ) {
    throw invalidParams(`taskIds must be a list of 1 to ${BULK_MAX} task ids`, { path: "taskIds" });
  }
  return raw as string[];
}

function blockedView({ nodeId, reason, at }: NonNullable<TaskContext["blocked"]>): ConsoleTaskSummary["blocked"] {
  return { nodeId, reason, at };
}

function redactedDoc(doc: RunEventDoc): RunEventDoc {
  return { ...doc, payload: redactSecrets(doc.payload) as Record<string, unknown> };
}
