import { createHash, randomUUID } from "node:crypto";
import type { MoveRequest } from "../engine/task-move.js";
import { requireScope, type Principal } from "../auth/principal.js";
import type { CallContext } from "../auth/call-context.js";
import type { Message, Part } from "../domain/a2a-types.js";
import { canonicalJson } from "../domain/canonical-json.js";
import { DomainError } from "../domain/errors.js";
import type { TaskSupervisor } from "../engine/task-supervisor.js";
import type { DrainPolicy } from "../machine/task-events.js";
import type { TaskObserver } from "../engine/task-observer.js";
import type { WorkflowCatalog } from "../engine/workflow-catalog.js";
import type { WorkflowDefinition } from "../workflows/workflow-types.js";
import type { InterruptTokenSigner } from "../interrupts/interrupt-tokens.js";
import type { IdempotencyKeyRef, IdempotencyStore } from "../store/idempotency-store.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { TaskRecord } from "../domain/task-record.js";
import { DuplicateTaskError } from "../store/task-store.js";
import { CallerStoreCalls, isUnknownStoreOutcome } from "../store/store-call-budget.js";
import { interruptTokensFor } from "./run-interrupts.js";
import { runSnapshotOf, type RunRequestInfo, type RunSnapshot } from "./run-snapshot.js";

/** POST /v1/runs, decoded. */
export interface StartRunRequest {
  workflowId: string;
  inputs?: Record<string, unknown>;
  tenantId?: string;
  metadata?: Record<string, unknown>;
  tags?: string[];
  configurable?: Record<string, unknown>;
}

export interface StartRunResponse {
  runId: string;
  status: string;
  eventsUrl: string;
  statusUrl: string;
}

export interface StartRunResult {
  status: number;
  body: StartRunResponse;
  /** True when an earlier request with the same Idempotency-Key produced this response. */
  replayed: boolean;
}

/** The answer to a steering action (202): the run's status as the action left it, and when it was written. */
export interface SteerRunResponse {
  runId: string;
  status: string;
  pausedAt?: string;
  resumedAt?: string;
  /** Retry, restart and move: the node the run goes on from. */
  nodeId?: string;
}

export interface WorkflowSummary {
  workflowId: string;
  name: string;
  description: string;
  version?: string;
  tags?: string[];
}

export interface RunServiceOptions {
  supervisor: TaskSupervisor;
  reads: TaskReadPort;
  observer: TaskObserver;
  catalog: WorkflowCatalog;
  idempotency: IdempotencyStore;
  idempotencyTtlMs: number;
  tokens: InterruptTokenSigner;
  clock?: () => Date;
  /** STORE_TIMEOUT_MS: the longest a call waits for one store operation. */
  storeTimeoutMs?: number;
}

const START_RUN_OPERATION = "POST /v1/runs";

/**
 * The OpenWOP runs API without HTTP. A run IS the durable A2A task (same id, store and machine): it is
 * created through the supervisor with a user message built from `inputs`, so A2A `tasks/get` reads it too.
 */
export class RunService {
  private readonly clock: () => Date;

  /** Store calls bounded by the caller's deadline and STORE_TIMEOUT_MS. */
  private readonly storeCalls: CallerStoreCalls;

  constructor(private readonly options: RunServiceOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.storeCalls = new CallerStoreCalls(options.storeTimeoutMs);
  }

  async startRun(request: StartRunRequest, ctx: CallContext, idempotencyKey?: string): Promise<StartRunResult> {
    requireScope(ctx.principal, "runs:create");
    const { principal } = ctx;
    if (request.tenantId !== undefined && request.tenantId !== principal.tenant) {
      throw new DomainError("permission-denied", `this caller cannot start runs in tenant "${request.tenantId}"`, {
        tenantId: request.tenantId,
      });
    }
    this.workflowOrThrow(request.workflowId);
    if (idempotencyKey === undefined) {
      const runId = randomUUID();
      await this.storeCalls.bounded(ctx, () => this.create(request, principal, runId));
      return { status: 201, body: createdBody(runId), replayed: false };
    }

    const { idempotency, idempotencyTtlMs } = this.options;
    const ref: IdempotencyKeyRef = {
      tenant: principal.tenant,
      principal: principal.id,
      operation: START_RUN_OPERATION,
      key: idempotencyKey,
    };
    const fingerprint = fingerprintOf(request);
    const now = this.clock();
    const runId = randomUUID();
    const existing = await this.storeCalls.bounded(ctx, () =>
      idempotency.reserve({
        ...ref,
        fingerprint,
        resourceId: runId,
        state: "reserved",
        createdAt: now.toISOString(),
        expireAt: new Date(now.getTime() + idempotencyTtlMs).toISOString(),
      }),
    );
    if (!existing) {
      try {
        // A concurrent replay of this key may already have created the run (same id): that is success too.
        await this.storeCalls.bounded(ctx, () => this.createUnlessExists(request, principal, runId));
      } catch (err) {
        // A store that did not answer may still create the run: the reservation (with its run id) stays, so
        // the retry of this key finishes that same run instead of starting a second one.
        if (!isUnknownStoreOutcome(err)) await idempotency.release(ref).catch(() => undefined);
        throw err;
      }
      const response = { status: 201, body: createdBody(runId) };
      await this.storeCalls.bounded(ctx, () => idempotency.complete(ref, response));
      return { ...response, replayed: false };
    }
    if (existing.fingerprint !== fingerprint) {
      throw new DomainError(
        "idempotency-conflict",
        "this Idempotency-Key was already used with a different request body; use a new key for a new request",
        {
          idempotencyKey,
          runId: existing.resourceId,
        },
      );
    }
    if (existing.state === "completed" && existing.response) {
      return { status: existing.response.status, body: existing.response.body as StartRunResponse, replayed: true };
    }
    // Reserved but not completed: the first request is still creating the run, or its process died between
    // the two writes. Either way finish the SAME run (its id was fixed in the reservation).
    if (!(await this.storeCalls.read(ctx, () => this.options.reads.find(existing.resourceId))))
      await this.storeCalls.bounded(ctx, () => this.createUnlessExists(request, principal, existing.resourceId));
    const response = { status: 201, body: createdBody(existing.resourceId) };
    await this.storeCalls.bounded(ctx, () => idempotency.complete(ref, response));
    return { ...response, replayed: true };
  }

  async snapshot(runId: string, ctx: CallContext): Promise<RunSnapshot> {
    requireScope(ctx.principal, "runs:read");
    return this.snapshotOf(
      await this.storeCalls.read(ctx, () => this.options.reads.get(runId, ctx.principal.tenant)),
      ctx.principal,
    );
  }

  /** `snapshot` with the record it was read from (the v2 view reads the era key from the record). */
  async read(runId: string, ctx: CallContext): Promise<{ record: TaskRecord; snapshot: RunSnapshot }> {
    requireScope(ctx.principal, "runs:read");
    const record = await this.storeCalls.read(ctx, () => this.options.reads.get(runId, ctx.principal.tenant));
    return { record, snapshot: this.snapshotOf(record, ctx.principal) };
  }

  /** The snapshot of a record, with interrupt tokens for `principal`. */
  snapshotOf(record: TaskRecord, principal: Principal): RunSnapshot {
    const context = this.options.reads.contextOf(record);
    return runSnapshotOf(record, context, interruptTokensFor(this.options.tokens, record, context, principal));
  }

  /** Requests the cancel; the run is `cancelling` until the engine has stopped it (then `cancelled`). */
  async cancel(runId: string, ctx: CallContext, reason?: string): Promise<TaskRecord> {
    requireScope(ctx.principal, "runs:cancel");
    try {
      return await this.storeCalls.bounded(ctx, () => this.options.supervisor.cancel(runId, ctx.principal, reason));
    } catch (err) {
      if (err instanceof DomainError && err.code === "task-not-cancelable") {
        const status = err.details?.["status"];
        throw new DomainError(
          "task-not-cancelable",
          `run ${runId} is already ${String(status)}; only an active run can be cancelled`,
          { runId, status },
        );
      }
      throw err;
    }
  }

  /**
   * runs.md "Pause and resume" (scope `runs:cancel`): the run takes no step, timer or reply until resumed.
   * `drain-current-node` (default) lets the running node finish and records its outcome; `immediate` drops it.
   */
  async pause(runId: string, ctx: CallContext, request: { reason?: string; drainPolicy?: DrainPolicy } = {}) {
    requireScope(ctx.principal, "runs:cancel");
    const record = await this.storeCalls.bounded(ctx, () =>
      this.options.supervisor.steering.pause(runId, ctx.principal, request),
    );
    return { runId, status: record.status, pausedAt: record.updatedAt } satisfies SteerRunResponse;
  }

  /** Back to the status the run was paused in (running, or waiting at its gate). */
  async resume(runId: string, ctx: CallContext, request: { reason?: string } = {}): Promise<SteerRunResponse> {
    requireScope(ctx.principal, "runs:cancel");
    const record = await this.storeCalls.bounded(ctx, () =>
      this.options.supervisor.steering.resume(runId, ctx.principal, request),
    );
    return { runId, status: record.status, resumedAt: record.updatedAt };
  }

  /**
   * The host's own operations (not OpenWOP's): re-running work takes control of the run as a cancel does and
   * starts work as a new run does, so both `runs:cancel` and `runs:create` are required.
   */
  async retry(runId: string, ctx: CallContext): Promise<SteerRunResponse> {
    requireScope(ctx.principal, "runs:cancel");
    requireScope(ctx.principal, "runs:create");
    const record = await this.storeCalls.bounded(ctx, () =>
      this.options.supervisor.steering.retry(runId, ctx.principal),
    );
    return { runId, status: record.status, nodeId: this.options.reads.contextOf(record).cursor ?? undefined };
  }

  async restart(runId: string, nodeId: string, ctx: CallContext, reason?: string): Promise<SteerRunResponse> {
    requireScope(ctx.principal, "runs:cancel");
    requireScope(ctx.principal, "runs:create");
    const record = await this.storeCalls.bounded(ctx, () =>
      this.options.supervisor.steering.restart(runId, ctx.principal, nodeId, reason),
    );
    return { runId, status: record.status, nodeId };
  }

  /** A waiting or paused run goes on in another version of its workflow, from the node `nodes` maps its current node to. */
  async move(runId: string, request: MoveRequest, ctx: CallContext): Promise<SteerRunResponse> {
    requireScope(ctx.principal, "runs:cancel");
    requireScope(ctx.principal, "runs:create");
    const record = await this.storeCalls.bounded(ctx, () =>
      this.options.supervisor.steering.move(runId, ctx.principal, request),
    );
    return { runId, status: record.status, nodeId: this.options.reads.contextOf(record).cursor ?? undefined };
  }

  /** Resolves with the first committed record satisfying `done`, or the latest one after `timeoutMs`. */
  waitFor(runId: string, ctx: CallContext, done: (r: TaskRecord) => boolean, timeoutMs: number): Promise<TaskRecord> {
    return this.options.observer.waitUntil({
      taskId: runId,
      tenant: ctx.principal.tenant,
      until: done,
      timeoutMs,
      signal: ctx.signal,
    });
  }

  workflows(ctx: CallContext): WorkflowSummary[] {
    requireScope(ctx.principal, "manifest:read");
    return this.options.catalog.list().map((w) => ({
      workflowId: w.id,
      name: w.name,
      description: w.description,
      ...(w.version ? { version: w.version } : {}),
      ...(w.tags ? { tags: w.tags } : {}),
    }));
  }

  workflow(workflowId: string, ctx: CallContext): WorkflowDefinition {
    requireScope(ctx.principal, "manifest:read");
    this.workflowOrThrow(workflowId);
    return this.options.catalog.asWritten(workflowId)!;
  }

  /**
   * The kind of each node of a workflow as deployed (the v2 event view names a node's type by it; a node the
   * deployed definition lacks, from a run on an older version, has none).
   */
  nodeKinds(workflowId: string): ReadonlyMap<string, string> {
    return new Map((this.options.catalog.get(workflowId)?.nodes ?? []).map((node) => [node.id, node.kind]));
  }

  // ------------------------------------------------------------------------------------------

  private workflowOrThrow(workflowId: string): WorkflowDefinition {
    const workflow = this.options.catalog.get(workflowId);
    if (!workflow) {
      throw new DomainError(
        "not-found",
        `unknown workflowId "${workflowId}"; this host serves: ${this.options.catalog.ids().join(", ")}`,
        { workflowId },
      );
    }
    return workflow;
  }

  private async create(request: StartRunRequest, principal: Principal, runId: string): Promise<TaskRecord> {
    const inputs = request.inputs ?? {};
    const text = [inputs["text"], inputs["prompt"]].find((v): v is string => typeof v === "string" && v.length > 0);
    const parts: Part[] = [...(text ? [{ kind: "text" as const, text }] : []), { kind: "data", data: inputs }];
    const run: RunRequestInfo = {
      transport: "rest",
      createdBy: principal.id,
      ...(request.tags ? { tags: request.tags } : {}),
      ...(request.metadata ? { metadata: request.metadata } : {}),
      ...(request.configurable ? { configurable: request.configurable } : {}),
    };
    const message: Message = { messageId: randomUUID(), role: "user", parts, metadata: { openwop: { run } } };
    return this.options.supervisor.createTask({ workflowId: request.workflowId, message, principal, taskId: runId });
  }

  private async createUnlessExists(request: StartRunRequest, principal: Principal, runId: string): Promise<void> {
    try {
      await this.create(request, principal, runId);
    } catch (err) {
      if (!(err instanceof DuplicateTaskError)) throw err;
    }
  }
}

function createdBody(runId: string): StartRunResponse {
  const path = `/v1/runs/${encodeURIComponent(runId)}`;
  return { runId, status: "pending", eventsUrl: `${path}/events`, statusUrl: path };
}

/** Two requests are "the same" when their JSON is equal, whatever the key order. */
function fingerprintOf(request: StartRunRequest): string {
  return createHash("sha256").update(canonicalJson(request)).digest("hex");
}
