import type { A2ATaskState } from "../domain/a2a-types.js";
import { DomainError, taskNotFound } from "../domain/errors.js";
import { isTerminalRunStatus } from "../domain/run-status.js";
import { persistedContextOf, persistTaskSnapshot } from "../machine/persisted-task-snapshot.js";
import { applyTaskEvent, createTaskActor, restoreTaskActor, type TaskActor } from "../machine/task-actor.js";
import type { TaskContext } from "../machine/task-context.js";
import type { TaskEvent } from "../machine/task-events.js";
import type { TaskMachineInput } from "../machine/task-machine.js";
import { runStatusOf, stateMetaOf, type TaskSnapshot } from "../machine/task-projection.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import { StaleWriteError, type RunEvent, type TaskListPage, type TaskListQuery, type TaskRecord, type TaskRecordChanges, type TaskStore } from "../store/task-store.js";
import type { IdempotencySeed } from "./message-idempotency.js";
import { KeyedLock } from "./keyed-lock.js";
import type { TransitionHook } from "./transition-hook.js";
import { logEventsFor } from "./transition-log.js";

/**
 * A task held in memory: its machine state, the record as last committed, and the transitions staged under
 * the task's lock but not yet written. `stored` is false for a task whose creating write has not happened.
 */
export interface LiveTask {
  actor: TaskActor;
  record: TaskRecord;
  staged: RunEvent[];
  stagedAt: string;
  stored: boolean;
}

/** A task to create: the machine's input, when, and the creating message's idempotency key. */
export interface NewTask extends TaskMachineInput {
  at: string;
  idempotency?: IdempotencySeed;
}

export interface TaskRepositoryOptions {
  store: TaskStore;
  hook: TransitionHook;
  /** How long a terminal task stays readable. */
  retentionMs: number;
}

/**
 * The only code that touches the TaskStore for tasks. Loads (rehydrates) tasks, and writes their
 * transitions with the version check: transitions are staged (applied to the machine, numbered in the
 * log) and flushed together in ONE store write when something must see them: a caller, a subscriber, or an
 * effect about to run (commit before notify, and before effect). Every write is published to the
 * transition hook after it is stored, so no reader ever sees a state that is not stored. The per-task lock
 * serializes all writes to one task; everything here but the reads must run under it, and nothing staged
 * outlives it: `withLock` flushes what its caller left staged, or drops it if the caller failed.
 */
export class TaskRepository implements TaskReadPort {
  private readonly live = new Map<string, LiveTask>();
  private readonly lock = new KeyedLock();

  constructor(private readonly options: TaskRepositoryOptions) {}

  /** Serializes everything that touches one task. */
  withLock<T>(taskId: string, fn: () => Promise<T>): Promise<T> {
    return this.lock.run(taskId, async () => {
      let result: T;
      try {
        result = await fn();
      } catch (err) {
        if (this.live.get(taskId)?.staged.length) this.passivate(taskId);
        throw err;
      }
      if (this.live.get(taskId)?.staged.length) await this.flush(taskId);
      return result;
    });
  }

  /** Number of tasks holding their state in memory (waiting tasks do not). */
  liveCount(): number {
    return this.live.size;
  }

  // ---------------------------------------------------------------- writes (under the task's lock)

  /**
   * Stages a new task (run.created); the store sees it at the next flush, together with whatever the
   * task does before then. Answers the record as of run.created (version 0): what the creator shows first.
   * The flush throws the store's duplicate errors.
   */
  stageCreate(task: NewTask): TaskRecord {
    const { taskId, contextId, workflowId, tenant, firstNode, message, at, idempotency } = task;
    const actor = createTaskActor({ taskId, contextId, workflowId, tenant, firstNode, message });
    const snapshot = actor.getSnapshot();
    const events = logEventsFor({ event: { type: "CREATED", at }, after: snapshot, firstSequence: 0 });
    const record: TaskRecord = {
      taskId,
      tenant,
      contextId,
      workflowId,
      version: events.length - 1,
      createdAt: at,
      ...this.changesFor(snapshot, at),
      ...(idempotency ? { idempotencyKey: idempotency.key, requestFingerprint: idempotency.fingerprint } : {}),
    };
    this.live.set(taskId, { actor, record, staged: events, stagedAt: at, stored: false });
    return record;
  }

  /** The task's state and record, rehydrated from the store when it was passivated. */
  async load(taskId: string, tenant?: string): Promise<LiveTask> {
    let live = this.live.get(taskId);
    if (!live) {
      const record = await this.options.store.get(taskId);
      if (!record) throw taskNotFound(taskId);
      live = { actor: restoreTaskActor(record.snapshot, taskId), record, staged: [], stagedAt: record.updatedAt, stored: true };
      this.live.set(taskId, live);
    }
    if (tenant !== undefined && live.record.tenant !== tenant) throw taskNotFound(taskId);
    return live;
  }

  /**
   * Applies one event to the machine and numbers its log events after everything committed or staged;
   * nothing is written until `flush`. Refuses an event the current state does not accept (DomainError).
   */
  stage(live: LiveTask, event: TaskEvent): TaskSnapshot {
    const { before, after } = applyTaskEvent(live.actor, event);
    const firstSequence = (live.staged.at(-1)?.sequence ?? live.record.version) + 1;
    for (const logged of logEventsFor({ event, before, after, firstSequence })) live.staged.push(logged);
    live.stagedAt = event.at;
    return after;
  }

  /**
   * Writes everything staged in ONE store call (the create, or a commit expecting the version we hold),
   * then publishes all of it. On a failed write the task is dropped from memory, so the next access
   * rehydrates the committed state.
   */
  async flush(taskId: string): Promise<TaskRecord> {
    const live = this.live.get(taskId);
    if (!live) throw taskNotFound(taskId);
    const events = live.staged;
    if (events.length === 0) return live.record;
    const snapshot = live.actor.getSnapshot();
    const changes = this.changesFor(snapshot, live.stagedAt);
    const version = events[events.length - 1]!.sequence;
    try {
      if (live.stored) await this.options.store.commit(taskId, live.record.version, changes, events);
      else await this.options.store.create({ ...live.record, ...changes, version }, events);
    } catch (err) {
      this.passivate(taskId);
      if (err instanceof StaleWriteError) {
        throw new DomainError("conflict", `Task ${taskId} was changed concurrently; retry the request`, { taskId }, { cause: err });
      }
      throw err;
    }
    live.record = { ...live.record, ...changes, version };
    live.staged = [];
    live.stored = true;
    this.options.hook.publish({ record: live.record, context: snapshot.context, events });
    return live.record;
  }

  /** Stages one event and writes it with whatever was staged before (one store write), then publishes. */
  async commit(taskId: string, event: TaskEvent): Promise<TaskRecord> {
    this.stage(await this.load(taskId), event);
    return this.flush(taskId);
  }

  /** Drops the task's state (and anything staged); the next access rehydrates it from the store. */
  passivate(taskId: string): void {
    this.live.delete(taskId);
  }

  /** Waits for every write in flight, then drops every task held in memory. */
  async close(): Promise<void> {
    await this.lock.drain();
    this.live.clear();
  }

  // ---------------------------------------------------------------- reads (the read port)

  async get(taskId: string, tenant: string): Promise<TaskRecord> {
    const live = this.live.get(taskId);
    const record = live?.stored ? live.record : await this.options.store.get(taskId);
    if (!record || record.tenant !== tenant) throw taskNotFound(taskId);
    return record;
  }

  find(taskId: string): Promise<TaskRecord | null> {
    return this.options.store.get(taskId);
  }

  contextOf(record: TaskRecord): TaskContext {
    return persistedContextOf(record.snapshot, record.taskId);
  }

  readEvents(taskId: string, fromSequence: number, limit?: number): Promise<RunEvent[]> {
    return this.options.store.readEvents(taskId, fromSequence, limit);
  }

  findByIdempotencyKey(idempotencyKey: string): Promise<TaskRecord | null> {
    return this.options.store.findByIdempotencyKey(idempotencyKey);
  }

  list(query: TaskListQuery): Promise<TaskListPage> {
    return this.options.store.list(query);
  }

  /** Every task that is not terminal (start-up recovery). */
  runnableTaskIds(): Promise<string[]> {
    return this.options.store.runnableTaskIds();
  }

  /** Task ids whose durable timer is due at `now`. */
  dueTimers(now: Date, limit: number): Promise<string[]> {
    return this.options.store.dueTimers(now, limit);
  }

  // ------------------------------------------------------------------------------------------

  private changesFor(snapshot: TaskSnapshot, at: string): TaskRecordChanges {
    const status = runStatusOf(snapshot);
    const meta = stateMetaOf(snapshot);
    const { context } = snapshot;
    const a2a: A2ATaskState = {
      taskId: context.taskId,
      runId: context.taskId,
      contextId: context.contextId,
      state: meta.a2aState,
      ...(meta.interruptKind ? { interruptKind: meta.interruptKind } : {}),
      updatedAt: at,
    };
    return {
      status,
      a2a,
      snapshot: persistTaskSnapshot(snapshot),
      updatedAt: at,
      expireAt: isTerminalRunStatus(status) ? new Date(Date.parse(at) + this.options.retentionMs).toISOString() : null,
      timerDueAt: context.timer?.dueAt ?? null,
    };
  }
}
