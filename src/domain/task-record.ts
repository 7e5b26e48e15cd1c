import type { A2ATaskState, Artifact, Message, TaskStatus } from "./a2a-types.js";
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
  a2a?: { status?: TaskStatus; artifact?: Artifact; append?: boolean; lastChunk?: boolean; metadata?: Record<string, unknown> };
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
  /** Sequence of the last committed event. */
  version: number;
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
