import type { Message } from "../domain/a2a-types.js";
import { isTerminalRunStatus, type InterruptKind, type RunStatus } from "../domain/run-status.js";
import type { TaskContext } from "../machine/task-context.js";
import type { TaskRecord } from "../domain/task-record.js";

/** A pending interrupt as GET /v1/runs/{runId} shows it (interrupt.md `interrupt.requested`, plus its tokens). */
export interface RunInterruptView {
  interruptId: string;
  nodeId: string;
  kind: InterruptKind;
  data: Record<string, unknown>;
  requestedAt: string;
  expiresAt?: string;
  /** Signed resolve token (POST /v1/interrupts/{token}); only for callers allowed to respond to approvals. */
  token?: string;
  /** Signed inspect-only token (GET /v1/interrupts/{token}). */
  inspectToken?: string;
}

/** RunSnapshot (run-snapshot.schema.json; additionalProperties allowed). */
export interface RunSnapshot {
  runId: string;
  workflowId: string;
  /** The version of the definition the run walks (docs/workflows.md "Changing a workflow"); absent on older runs. */
  workflowVersion?: string;
  status: RunStatus;
  owner: { tenant: string; principal?: string };
  /** Which host instance drives the run now (its task lease); absent while the run waits or after it ended. */
  lease?: { instanceId: string; epoch: number; expiresAt: string };
  currentNodeId?: string;
  createdAt: string;
  updatedAt: string;
  startedAt?: string;
  completedAt?: string;
  error?: { code: string; message: string; details?: Record<string, unknown> };
  eventLogSchemaVersion: 2;
  interrupts: RunInterruptView[];
  tags?: string[];
  metadata?: Record<string, unknown>;
  configurable?: Record<string, unknown>;
}

/** What POST /v1/runs keeps on the run's first message (`metadata.openwop.run`), so it survives with the task. */
export interface RunRequestInfo {
  transport: "rest";
  createdBy: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  configurable?: Record<string, unknown>;
}

export function runRequestInfoOf(context: TaskContext): RunRequestInfo | undefined {
  // `request` is the first message; contexts built by hand (tests) may have only the history.
  const first: Message | undefined = context.request ?? context.history.find((m) => m.role === "user");
  const openwop = first?.metadata?.["openwop"];
  const run = typeof openwop === "object" && openwop !== null ? (openwop as { run?: unknown }).run : undefined;
  return typeof run === "object" && run !== null ? (run as RunRequestInfo) : undefined;
}

/** The snapshot of a stored run. Pure: the tokens of the pending interrupt are passed in. */
export function runSnapshotOf(
  record: TaskRecord,
  context: TaskContext,
  tokens?: { resolve?: string; inspect?: string },
): RunSnapshot {
  const { interrupt, error } = context;
  const terminal = isTerminalRunStatus(record.status);
  const request = runRequestInfoOf(context);
  const currentNodeId = terminal ? undefined : (interrupt?.nodeId ?? context.cursor ?? undefined);
  const metadata = {
    ...request?.metadata,
    ...((record.status === "cancelled" || record.status === "cancelling") && context.cancelReason
      ? { cancelReason: context.cancelReason }
      : {}),
  };
  return {
    runId: record.taskId,
    workflowId: record.workflowId,
    ...(record.workflowVersion !== undefined ? { workflowVersion: record.workflowVersion } : {}),
    status: record.status,
    owner: { tenant: record.tenant, ...(request?.createdBy ? { principal: request.createdBy } : {}) },
    ...(currentNodeId ? { currentNodeId } : {}),
    ...(record.lease
      ? { lease: { instanceId: record.lease.owner, epoch: record.lease.epoch, expiresAt: record.lease.expiresAt } }
      : {}),
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    ...(context.startedAt ? { startedAt: context.startedAt } : {}),
    ...(terminal && context.endedAt ? { completedAt: context.endedAt } : {}),
    ...(record.status === "failed" && error
      ? {
          error: {
            code: error.code,
            message: error.message,
            ...(error.nodeId ? { details: { nodeId: error.nodeId } } : {}),
          },
        }
      : {}),
    eventLogSchemaVersion: 2,
    interrupts: interrupt
      ? [
          {
            interruptId: interrupt.interruptId,
            nodeId: interrupt.nodeId,
            kind: interrupt.kind,
            data: interrupt.data,
            requestedAt: interrupt.requestedAt,
            ...(interrupt.expiresAt ? { expiresAt: interrupt.expiresAt } : {}),
            ...(tokens?.resolve ? { token: tokens.resolve } : {}),
            ...(tokens?.inspect ? { inspectToken: tokens.inspect } : {}),
          },
        ]
      : [],
    ...(request?.tags ? { tags: request.tags } : {}),
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    ...(request?.configurable ? { configurable: request.configurable } : {}),
  };
}
