import type { TaskContext } from "../machine/task-context.js";
import type { ArtifactRef } from "./push-artifact-refs.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";

/**
 * What push needs from the rest of the host, declared here and wired in app.ts, so push depends on no engine
 * class: a caller's task (tenant-checked), the committed task log (the outbox), commits as they happen, and
 * the push body of each A2A version.
 */

/** A caller's task: not found (a DomainError) when it does not exist or belongs to another tenant. */
export interface PushTaskReader {
  get(taskId: string, tenant: string): Promise<TaskRecord>;
  /** The machine context of a record (its pending interrupt). */
  contextOf(record: TaskRecord): Pick<TaskContext, "interrupt">;
}

/** The committed tasks and their event logs, read by the delivery worker. */
export type PushTaskLog = Pick<TaskReadPort, "find" | "readEvents">;

/** A transition, published only after it is committed. */
export interface CommittedChange {
  record: Pick<TaskRecord, "taskId">;
  events: readonly RunEvent[];
}

/** Subscription to every committed transition; returns the unsubscribe. */
export interface CommittedChanges {
  onAny(listener: (change: CommittedChange) => void): () => void;
}

/**
 * Commits made by any instance on the same database, per task (the store's commit feed). A notice only
 * says "something was committed to this task" (up to `sequence`, when the feed knows it).
 */
export interface RemoteCommits {
  onTask(taskId: string, listener: (notice: { sequence?: number }) => void): () => void;
}

/** The push body in one A2A version's wire shape, and its content type. */
export interface PushBodyEncoder {
  contentType: string;
  /** `artifacts`: the task's artifact references up to `event` (a 0.3 body names them). */
  encode(task: Pick<TaskRecord, "taskId" | "contextId">, event: RunEvent, artifacts: ArtifactRef[]): string;
}

/** The encoder for a config registered over A2A `version` ("0.3", "1.0"; the version registry answers). */
export type PushBodyEncoders = (version: string | undefined) => PushBodyEncoder;
