import { invalidParams } from "../domain/errors.js";
import type { A2ATaskStateValue } from "../domain/run-status.js";
import type { Task } from "../domain/a2a-types.js";
import type { TaskRecord } from "../domain/task-record.js";
import type { HistoryLimit } from "./task-view.js";

/** ListTasks (A2A 1.0; no v0.3 equivalent): filters and paging, always within the caller's tenant. */
export interface ListTasksQuery {
  contextId?: string;
  state?: A2ATaskStateValue;
  /** Only tasks whose status timestamp is at or after this instant (ISO 8601). */
  statusTimestampAfter?: string;
  /** 1..100; absent = 50. */
  pageSize?: number;
  /** A `nextPageToken` of an earlier page; absent or "" = the first page. */
  pageToken?: string;
  history: HistoryLimit;
  /** false (the 1.0 default): tasks are listed without their artifacts. */
  includeArtifacts: boolean;
}

export interface TaskPage {
  /** Newest first: status timestamp descending, then task id. */
  tasks: Task[];
  /** "" on the last page. */
  nextPageToken: string;
  pageSize: number;
  /** Tasks matching the filters across all pages. */
  totalSize: number;
}

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

export function pageSizeOf(requested: number | undefined): number {
  if (requested === undefined || requested === 0) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(requested) || requested < 1 || requested > MAX_PAGE_SIZE) {
    throw invalidParams(`pageSize must be an integer from 1 to ${MAX_PAGE_SIZE} (got ${requested})`, {
      path: "pageSize",
    });
  }
  return requested;
}

/** The keyset position after `record`, opaque to callers (base64url of JSON). */
export function encodePageToken(record: Pick<TaskRecord, "updatedAt" | "taskId">): string {
  return Buffer.from(JSON.stringify([1, record.updatedAt, record.taskId]), "utf8").toString("base64url");
}

export function decodePageToken(token: string): { updatedAt: string; taskId: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (
      Array.isArray(value) &&
      value.length === 3 &&
      value[0] === 1 &&
      typeof value[1] === "string" &&
      typeof value[2] === "string" &&
      !Number.isNaN(Date.parse(value[1]))
    ) {
      return { updatedAt: value[1], taskId: value[2] };
    }
  } catch {
    // fall through
  }
  throw invalidParams(
    "pageToken is not a token this agent issued (use nextPageToken of the previous page, or omit it)",
    { path: "pageToken" },
  );
}
