import type { TaskContext } from "../machine/task-context.js";
import type { ArtifactRef } from "./push-artifact-refs.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import type { CommitBus } from "../store/commit-bus.js";

/**
 * What push needs from the rest of the host, declared here and wired in core.ts, so push depends on no engine
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

/**
 * Commits as they happen (store/commit-bus.ts): this instance's transitions, and notices of other instances'
 * commits per task, which push uses only when they are pushed (a change stream), not polled.
 */
export type PushCommits = Pick<CommitBus, "onAny" | "onRemote" | "remotePushed">;

/** The push body in one A2A version's wire shape, and its content type. */
export interface PushBodyEncoder {
  contentType: string;
  /** `artifacts`: the task's artifact references up to `event` (a 0.3 body names them). */
  encode(task: Pick<TaskRecord, "taskId" | "contextId">, event: RunEvent, artifacts: ArtifactRef[]): string;
}

/** The encoder for a config registered over A2A `version` ("0.3", "1.0"; the version registry answers). */
export type PushBodyEncoders = (version: string | undefined) => PushBodyEncoder;
