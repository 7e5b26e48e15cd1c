import { isTerminalRunStatus } from "../domain/run-status.js";
import {
  DuplicateTaskError,
  StaleWriteError,
  type RunEvent,
  type TaskRecord,
  type TaskRecordChanges,
  type TaskStore,
} from "./task-store.js";

interface Entry {
  record: TaskRecord;
  events: RunEvent[];
}

/** In-process store: fast tests, and the fallback when no MongoDB is reachable. Nothing survives a restart. */
export class MemoryTaskStore implements TaskStore {
  readonly kind = "memory" as const;
  private readonly tasks = new Map<string, Entry>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  async init(): Promise<void> {}

  async create(record: TaskRecord, events: RunEvent[]): Promise<void> {
    if (this.tasks.has(record.taskId)) throw new DuplicateTaskError(record.taskId);
    this.tasks.set(record.taskId, { record: structuredClone(record), events: structuredClone(events) });
  }

  async commit(taskId: string, expectedVersion: number, changes: TaskRecordChanges, events: RunEvent[]): Promise<void> {
    const entry = this.tasks.get(taskId);
    if (!entry || entry.record.version !== expectedVersion) throw new StaleWriteError(taskId, expectedVersion);
    const last = events.at(-1);
    entry.record = { ...entry.record, ...structuredClone(changes), version: last ? last.sequence : entry.record.version };
    entry.events.push(...structuredClone(events));
  }

  async get(taskId: string): Promise<TaskRecord | null> {
    const entry = this.live(taskId);
    return entry ? structuredClone(entry.record) : null;
  }

  async readEvents(taskId: string, fromSequence: number, limit = Number.MAX_SAFE_INTEGER): Promise<RunEvent[]> {
    const entry = this.live(taskId);
    if (!entry) return [];
    return structuredClone(entry.events.slice(fromSequence, fromSequence + limit));
  }

  async listActive(): Promise<TaskRecord[]> {
    return [...this.tasks.values()]
      .filter((e) => !isTerminalRunStatus(e.record.status))
      .map((e) => structuredClone(e.record));
  }

  async dueTimers(now: Date, limit: number): Promise<string[]> {
    return [...this.tasks.values()]
      .filter((e) => e.record.timerDueAt && Date.parse(e.record.timerDueAt) <= now.getTime())
      .sort((a, b) => Date.parse(a.record.timerDueAt ?? "") - Date.parse(b.record.timerDueAt ?? ""))
      .slice(0, limit)
      .map((e) => e.record.taskId);
  }

  async close(): Promise<void> {}

  /** Expired tasks read as not found and are dropped, as the TTL index does in MongoDB. */
  private live(taskId: string): Entry | undefined {
    const entry = this.tasks.get(taskId);
    if (entry?.record.expireAt && Date.parse(entry.record.expireAt) <= this.now().getTime()) {
      this.tasks.delete(taskId);
      return undefined;
    }
    return entry;
  }
}
