import type { A2ATaskState, Artifact, TaskStatus } from "../domain/a2a-types.js";
import type { RunStatus } from "../domain/run-status.js";

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
  a2a?: { status?: TaskStatus; artifact?: Artifact; metadata?: Record<string, unknown> };
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
}

/** The fields a transition rewrites. */
export type TaskRecordChanges = Pick<TaskRecord, "status" | "a2a" | "snapshot" | "updatedAt" | "expireAt" | "timerDueAt">;

/** A writer whose expected version is no longer current lost the race; it must reload and retry. */
export class StaleWriteError extends Error {
  override readonly name = "StaleWriteError";
  constructor(readonly taskId: string, readonly expectedVersion: number) {
    super(`task ${taskId} moved past version ${expectedVersion}`);
  }
}

export class DuplicateTaskError extends Error {
  override readonly name = "DuplicateTaskError";
  constructor(readonly taskId: string) {
    super(`task ${taskId} already exists`);
  }
}

/**
 * The store port. Each call of `create`/`commit` is ONE atomic write: snapshot, projections and the new
 * events land together or not at all, so there is no state between two writes to repair.
 */
export interface TaskStore {
  readonly kind: "memory" | "mongodb";
  init(): Promise<void>;
  create(record: TaskRecord, events: RunEvent[]): Promise<void>;
  commit(taskId: string, expectedVersion: number, changes: TaskRecordChanges, events: RunEvent[]): Promise<void>;
  /** null when unknown or expired. */
  get(taskId: string): Promise<TaskRecord | null>;
  /** Events with sequence >= fromSequence, in order, at most `limit`. */
  readEvents(taskId: string, fromSequence: number, limit?: number): Promise<RunEvent[]>;
  /** Every task that is not terminal (start-up recovery). */
  listActive(): Promise<TaskRecord[]>;
  /** Task ids whose durable timer is due at `now`. */
  dueTimers(now: Date, limit: number): Promise<string[]>;
  close(): Promise<void>;
}
