import type { A2ATaskState, Artifact, Message, TaskStatus } from "./a2a-types.js";
import { DomainError } from "./errors.js";
import type { RunStatus } from "./run-status.js";

/** One entry of the per-task event log (OpenWOP RunEventDoc) plus what it means on the A2A wire. */
export interface RunEvent {
  eventId: string;
  runId: string;
  nodeId?: string;
  type: string;
  payload: Record<string, unknown>;
  timestamp: string;
  /** Gap-free per task, from 0; equal to the event's index in the log. */
  sequence: number;
  /** The A2A update this event produces, if any: a status change or an artifact. */
  /** `append`/`lastChunk` only on a streamed chunk (absent: a whole artifact). */
  /**
   * `generation`: the task's A2A generation after this event (its artifact, then its status, each count one:
   * `a2aMutationsOf`). Absent on events written before generations were kept.
   */
  a2a?: {
    status?: TaskStatus;
    artifact?: Artifact;
    append?: boolean;
    lastChunk?: boolean;
    metadata?: Record<string, unknown>;
    generation?: number;
  };
  /**
   * The messages this event's transition appended to the task's A2A history (on the last event of the
   * transition), and `historyEnd`, the history's length after them: its messages are at indexes
   * historyEnd - history.length to historyEnd - 1. The log is where the whole history lives.
   */
  history?: Message[];
  historyEnd?: number;
}

/** The durable task: the machine snapshot and its projections, committed together with its events. */
export interface TaskRecord {
  taskId: string;
  tenant: string;
  contextId: string;
  workflowId: string;
  /**
   * The version of the workflow definition the run walks (the machine context's, projected here so the store can
   * count the runs of a version). Absent on runs created before versions were recorded.
   */
  workflowVersion?: string;
  /** Sequence of the last committed event. */
  version: number;
  /**
   * The A2A generation (the 1.1 draft's `Task.generation`): how many A2A mutations (status changes and
   * artifact additions or updates, one update event each) the log holds up to `version`; 1 at creation.
   * Absent on tasks last written before generations were kept.
   */
  generation?: number;
  status: RunStatus;
  a2a: A2ATaskState;
  /** XState persisted snapshot. */
  snapshot: unknown;
  createdAt: string;
  updatedAt: string;
  /** Set when terminal: the task reads as not found after this instant. */
  expireAt?: string | null;
  /** Due time of the durable timer (delay node or interrupt deadline), for the scheduler. */
  timerDueAt?: string | null;
  /**
   * The creating message's idempotency key: a digest of (tenant, caller principal, message.messageId). Unique
   * among live tasks, so a repeated message never starts a second run. Absent on tasks created otherwise.
   */
  idempotencyKey?: string | null;
  /** Digest of the creating request's content, to tell a retry (same content) from a reused messageId. */
  requestFingerprint?: string | null;
  /** Which instance drives the task's nodes now (runnable tasks only; a waiting or ended task holds none). */
  lease?: TaskLease | null;
  /**
   * OpenWOP's era key (v2 versioning.md §2.2): 3 on every task created since this host serves v2. Absent on tasks
   * a v1-era host wrote, which read as 2; never rewritten.
   */
  eventLogSchemaVersion?: number;
}

/**
 * A task execution lease: one instance at a time drives a task's nodes. `epoch` grows with every
 * acquisition (it survives a release), so a commit fenced by an older epoch is refused.
 */
export interface TaskLease {
  owner: string;
  epoch: number;
  expiresAt: string;
}

/** How many A2A mutations an event carries: its artifact update and its status update count one each. */
export function a2aMutationsOf(event: Pick<RunEvent, "a2a">): number {
  return (event.a2a?.artifact ? 1 : 0) + (event.a2a?.status ? 1 : 0);
}

/**
 * The A2A 1.1 draft's `ifGenerationMatch`: throws TaskGenerationMismatch unless the task's generation is
 * `expected`. Checked on the record read before anything is written, and again under the task's lock.
 */
export function assertGeneration(record: Pick<TaskRecord, "taskId" | "generation">, expected: number): void {
  if (record.generation === expected) return;
  throw generationMismatch(record.taskId, expected, record.generation);
}

export function generationMismatch(taskId: string, expected: number, actual: number | undefined): DomainError {
  const now = actual === undefined ? "unknown" : String(actual);
  return new DomainError(
    "generation-mismatch",
    `Task ${taskId} is at generation ${now}, not ${expected} (ifGenerationMatch); nothing was changed: read the task and retry`,
    {
      taskId,
      expectedGeneration: expected,
      ...(actual !== undefined ? { currentGeneration: actual } : {}),
    },
  );
}
