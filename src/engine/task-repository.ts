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

/** A task held in memory: its actor and the record as last committed. */
export interface LiveTask {
  actor: TaskActor;
  record: TaskRecord;
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
 * The only code that touches the TaskStore for tasks. Loads (rehydrates) actors, commits each transition
 * with the version check, and passivates idle tasks. Every commit is written before it is published to the
 * transition hook, so no reader ever sees a state that is not stored. The per-task lock serializes all
 * writes to one task; `load`, `commit`, `create` and `passivate` must run under it.
 */
export class TaskRepository implements TaskReadPort {
  private readonly live = new Map<string, LiveTask>();
  private readonly lock = new KeyedLock();

  constructor(private readonly options: TaskRepositoryOptions) {}

  /** Serializes everything that touches one task. */
  withLock<T>(taskId: string, fn: () => Promise<T>): Promise<T> {
    return this.lock.run(taskId, fn);
  }

  /** Number of tasks holding an actor in memory (waiting tasks do not). */
  liveCount(): number {
    return this.live.size;
  }

  // ---------------------------------------------------------------- writes (under the task's lock)

  /** Stores a new task and its first events, then publishes them. Throws the store's duplicate errors. */
  async create(task: NewTask): Promise<TaskRecord> {
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
    try {
      await this.options.store.create(record, events);
    } catch (err) {
      actor.stop();
      throw err;
    }
    this.live.set(taskId, { actor, record });
    this.options.hook.publish({ record, context: snapshot.context, events });
    return record;
  }

  /** The task's actor and record, rehydrated from the store when it was passivated. */
  async load(taskId: string, tenant?: string): Promise<LiveTask> {
    let live = this.live.get(taskId);
    if (!live) {
      const record = await this.options.store.get(taskId);
      if (!record) throw taskNotFound(taskId);
      live = { actor: restoreTaskActor(record.snapshot, taskId), record };
      this.live.set(taskId, live);
    }
    if (tenant !== undefined && live.record.tenant !== tenant) throw taskNotFound(taskId);
    return live;
  }

  /** Applies one event, writes it (expecting the version we hold), then publishes it. */
  async commit(taskId: string, event: TaskEvent): Promise<TaskRecord> {
    const live = await this.load(taskId);
    const { before, after } = applyTaskEvent(live.actor, event);
    const events = logEventsFor({ event, before, after, firstSequence: live.record.version + 1 });
    const changes = this.changesFor(after, event.at);
    try {
      await this.options.store.commit(taskId, live.record.version, changes, events);
    } catch (err) {
      // The actor already moved; forget it so the next access rehydrates the committed state.
      this.passivate(taskId);
      if (err instanceof StaleWriteError) {
        throw new DomainError("conflict", `Task ${taskId} was changed concurrently; retry the request`, { taskId }, { cause: err });
      }
      throw err;
    }
    live.record = { ...live.record, ...changes, version: events[events.length - 1]!.sequence };
    this.options.hook.publish({ record: live.record, context: after.context, events });
    return live.record;
  }

  /** Stops and drops the task's actor; the next access rehydrates it from the store. */
  passivate(taskId: string): void {
    this.live.get(taskId)?.actor.stop();
    this.live.delete(taskId);
  }

  /** Waits for every write in flight, then drops every actor. */
  async close(): Promise<void> {
    await this.lock.drain();
    for (const live of this.live.values()) live.actor.stop();
    this.live.clear();
  }

  // ---------------------------------------------------------------- reads (the read port)

  async get(taskId: string, tenant: string): Promise<TaskRecord> {
    const record = this.live.get(taskId)?.record ?? (await this.options.store.get(taskId));
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
  listActive(): Promise<TaskRecord[]> {
    return this.options.store.listActive();
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
