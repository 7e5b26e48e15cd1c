import { requireScope, type Principal } from "../auth/principal.js";
import type { CallContext } from "../auth/call-context.js";
import { DomainError } from "../domain/errors.js";
import type { InterruptKind, RunStatus } from "../domain/run-status.js";
import type { TaskSupervisor } from "../engine/task-supervisor.js";
import type { WorkflowCatalog } from "../engine/workflow-catalog.js";
import { findNode, SYSTEM_TIMEOUT } from "../engine/workflow-walk.js";
import {
  InterruptTokenError,
  type InterruptTokenPayload,
  type InterruptTokenSigner,
} from "../interrupts/interrupt-tokens.js";
import type { TaskContext } from "../machine/task-context.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";

/** The tokens of a run's pending interrupt; the resolve token only for a principal allowed to respond. */
export function interruptTokensFor(
  signer: InterruptTokenSigner,
  record: TaskRecord,
  context: TaskContext,
  principal?: Principal,
): { resolve?: string; inspect: string } | undefined {
  const interrupt = context.interrupt;
  if (!interrupt || !isWaiting(record.status)) return undefined;
  // Issued as of the interrupt's request: the same token on every read, for every principal that may see it.
  const subject = {
    runId: record.taskId,
    nodeId: interrupt.nodeId,
    interruptId: interrupt.interruptId,
    issuedAt: interrupt.requestedAt,
    ...(interrupt.expiresAt ? { expiresAt: interrupt.expiresAt } : {}),
  };
  const mayRespond = !principal || principal.scopes === "*" || principal.scopes.includes("approvals:respond");
  return {
    ...(mayRespond ? { resolve: signer.issue(subject, "resolve") } : {}),
    inspect: signer.issue(subject, "inspect"),
  };
}

/** GET /v1/interrupts/{token}: what the token holder is asked. */
export interface InterruptInspection {
  runId: string;
  workflowId: string;
  nodeId: string;
  interruptId: string;
  kind: InterruptKind;
  data: Record<string, unknown>;
  requestedAt: string;
  expiresAt?: string;
  status: "pending";
  runStatus: RunStatus;
  intent: InterruptTokenPayload["intent"];
  tokenExpiresAt: string;
}

/** POST /v1/interrupts/{token}: the outcome, without the run's other data (the token is scoped to one interrupt). */
export interface TokenResolution {
  runId: string;
  nodeId: string;
  interruptId: string;
  /** false after an `ask`: the question was recorded and the interrupt stays pending. */
  resolved: boolean;
  status: RunStatus;
}

export interface RunInterruptsOptions {
  supervisor: TaskSupervisor;
  reads: TaskReadPort;
  catalog: WorkflowCatalog;
  tokens: InterruptTokenSigner;
}

/** Answers to a store read, in pages, until the log ends. */
const EVENT_PAGE = 1000;

/**
 * Resolving interrupts over the OpenWOP REST surface: by run and node (API key) or with a signed token.
 * Whether an interrupt can still be answered is decided from the run's state and event log, never by a
 * token store: a token is valid exactly while its interrupt is the run's pending one.
 */
export class RunInterrupts {
  constructor(private readonly options: RunInterruptsOptions) {}

  /** POST /v1/runs/{runId}/interrupts/{nodeId}. `decidedBy` is the calling principal. */
  async resolveAtNode(
    runId: string,
    nodeId: string,
    resumeValue: Record<string, unknown>,
    ctx: CallContext,
  ): Promise<TaskRecord> {
    requireScope(ctx.principal, "approvals:respond");
    const { supervisor, reads, catalog } = this.options;
    const record = await reads.get(runId, ctx.principal.tenant);
    // The run's own version: a gate renamed since it started is still this run's gate.
    const workflow = (await supervisor.versions.ofTask(record).catch(() => undefined))?.workflow;
    const node = workflow ? findNode(workflow, nodeId) : undefined;
    if (!node || !catalog.kinds.of(node.kind)?.reply?.byNodeId) {
      throw new DomainError(
        "interrupt-not-found",
        `run ${runId} (workflow ${record.workflowId}) has no interrupt node "${nodeId}"`,
        { runId, nodeId },
      );
    }
    const pending = reads.contextOf(record).interrupt;
    if (pending?.nodeId !== nodeId || !isWaiting(record.status))
      throw await this.notPending(runId, ctx.principal.tenant, nodeId);
    try {
      return await supervisor.resolveInterrupt(runId, ctx.principal, nodeId, resumeValue, {
        interruptId: pending.interruptId,
      });
    } catch (err) {
      if (lostRace(err)) throw await this.notPending(runId, ctx.principal.tenant, nodeId);
      throw err;
    }
  }

  /** GET /v1/interrupts/{token}. Either intent may inspect. */
  async inspect(token: string): Promise<InterruptInspection> {
    return (await this.inspectInTenant(token)).inspection;
  }

  /** `inspect`, with the run's tenant (OpenWOP v2 names the run by its tenant-bound id). */
  async inspectInTenant(token: string): Promise<{ tenant: string; inspection: InterruptInspection }> {
    const payload = this.verify(token);
    const { record, context } = await this.pendingFor(payload);
    const interrupt = context.interrupt!;
    const inspection: InterruptInspection = {
      runId: record.taskId,
      workflowId: record.workflowId,
      nodeId: interrupt.nodeId,
      interruptId: interrupt.interruptId,
      kind: interrupt.kind,
      data: interrupt.data,
      requestedAt: interrupt.requestedAt,
      ...(interrupt.expiresAt ? { expiresAt: interrupt.expiresAt } : {}),
      status: "pending",
      runStatus: record.status,
      intent: payload.intent,
      tokenExpiresAt: payload.expiresAt,
    };
    return { tenant: record.tenant, inspection };
  }

  /** POST /v1/interrupts/{token}: the token is the credential; `decidedBy` is `token:<interruptId>`. */
  async resolveWithToken(token: string, resumeValue: Record<string, unknown>): Promise<TokenResolution> {
    return (await this.resolveInTenant(token, resumeValue)).resolution;
  }

  /** `resolveWithToken`, with the run's tenant. */
  async resolveInTenant(
    token: string,
    resumeValue: Record<string, unknown>,
  ): Promise<{ tenant: string; resolution: TokenResolution }> {
    const payload = this.verify(token, "resolve");
    const { record } = await this.pendingFor(payload);
    const principal: Principal = {
      tenant: record.tenant,
      id: `token:${payload.interruptId}`,
      scopes: ["approvals:respond"],
    };
    let after: TaskRecord;
    try {
      after = await this.options.supervisor.resolveInterrupt(record.taskId, principal, payload.nodeId, resumeValue, {
        interruptId: payload.interruptId,
      });
    } catch (err) {
      if (lostRace(err)) throw await this.notPending(record.taskId, record.tenant, payload.nodeId, payload.interruptId);
      throw err;
    }
    const stillPending = this.options.reads.contextOf(after).interrupt?.interruptId === payload.interruptId;
    const resolution: TokenResolution = {
      runId: after.taskId,
      nodeId: payload.nodeId,
      interruptId: payload.interruptId,
      resolved: !stillPending,
      status: after.status,
    };
    return { tenant: record.tenant, resolution };
  }

  // ------------------------------------------------------------------------------------------

  /** Signature, intent and expiry, in that order. */
  private verify(token: string, need?: "resolve"): InterruptTokenPayload {
    let verified: ReturnType<InterruptTokenSigner["verify"]>;
    try {
      verified = this.options.tokens.verify(token);
    } catch (err) {
      if (!(err instanceof InterruptTokenError)) throw err;
      if (err.reason === "malformed") throw new DomainError("invalid-params", err.message);
      throw new DomainError("interrupt-not-found", err.message);
    }
    const { payload, expired } = verified;
    if (need === "resolve" && payload.intent !== "resolve") {
      throw new DomainError(
        "permission-denied",
        "this interrupt token only allows inspecting the interrupt; resolving it needs a resolve token",
        { intent: payload.intent },
      );
    }
    if (expired) {
      throw new DomainError(
        "interrupt-expired",
        `the interrupt token expired at ${payload.expiresAt}; read the run again for a fresh one`,
        { expiresAt: payload.expiresAt },
      );
    }
    return payload;
  }

  /** The run whose pending interrupt is the token's, or the reason it is not. */
  private async pendingFor(payload: InterruptTokenPayload): Promise<{ record: TaskRecord; context: TaskContext }> {
    const { reads } = this.options;
    const stored = await reads.find(payload.runId);
    if (!stored)
      throw new DomainError("interrupt-not-found", `the run of this interrupt token no longer exists`, {
        runId: payload.runId,
      });
    const record = await reads.get(payload.runId, stored.tenant);
    const context = reads.contextOf(record);
    if (context.interrupt?.interruptId !== payload.interruptId || !isWaiting(record.status)) {
      throw await this.notPending(record.taskId, record.tenant, payload.nodeId, payload.interruptId);
    }
    return { record, context };
  }

  /**
   * Why `nodeId` (or one interrupt of it) cannot be answered now: resolved before (409), ended by its own
   * deadline (410), left behind when the run ended (409), or never raised at all (404).
   */
  private async notPending(runId: string, tenant: string, nodeId: string, interruptId?: string): Promise<DomainError> {
    const { reads } = this.options;
    const record = await reads.get(runId, tenant);
    const status = record.status;
    const matches = (e: RunEvent) =>
      e.nodeId === nodeId && (interruptId === undefined || e.payload["interruptId"] === interruptId);
    const events = await readWholeLog(reads, runId);
    const resolved = events.filter((e) => e.type === "interrupt.resolved" && matches(e)).at(-1);
    const requested = events.some((e) => e.type === "interrupt.requested" && matches(e));
    const details = { runId, nodeId, ...(interruptId ? { interruptId } : {}), status };
    if (resolved?.payload["resolvedBy"] === SYSTEM_TIMEOUT) {
      return new DomainError(
        "interrupt-expired",
        `the interrupt at node "${nodeId}" of run ${runId} passed its deadline and was resolved by the host`,
        details,
      );
    }
    if (resolved)
      return new DomainError(
        "interrupt-already-resolved",
        `the interrupt at node "${nodeId}" of run ${runId} was already resolved`,
        details,
      );
    const context = reads.contextOf(record);
    if (requested && context.error?.nodeId === nodeId && context.error.code.endsWith("_timeout")) {
      return new DomainError(
        "interrupt-expired",
        `the interrupt at node "${nodeId}" of run ${runId} passed its deadline`,
        details,
      );
    }
    if (status === "paused" && context.interrupt?.nodeId === nodeId) {
      return new DomainError(
        "run-state-conflict",
        `run ${runId} is paused by an operator: the interrupt at node "${nodeId}" stays pending and can be answered once the run is resumed`,
        { ...details, runStatus: status },
      );
    }
    if (requested) {
      return new DomainError(
        "interrupt-already-resolved",
        `the interrupt at node "${nodeId}" of run ${runId} can no longer be resolved: the run is ${status}`,
        details,
      );
    }
    return new DomainError(
      "interrupt-not-found",
      `node "${nodeId}" of run ${runId} has no pending interrupt (the run is ${status})`,
      details,
    );
  }
}

/** waiting-approval, waiting-input, waiting-external: the only statuses in which an interrupt can be answered. */
function isWaiting(status: RunStatus): boolean {
  return status.startsWith("waiting-");
}

/** The supervisor refused because the interrupt stopped being pending between our read and its lock. */
function lostRace(err: unknown): boolean {
  return (
    err instanceof DomainError &&
    (err.code === "unsupported-operation" ||
      err.code === "not-found" ||
      err.code === "interrupt-already-resolved" ||
      err.code === "conflict")
  );
}

/** A run's whole event log, read in pages. */
export async function readWholeLog(reads: Pick<TaskReadPort, "readEvents">, runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for (;;) {
    const page = await reads.readEvents(runId, events.length, EVENT_PAGE);
    events.push(...page);
    if (page.length < EVENT_PAGE) return events;
  }
}
