import { randomUUID } from "node:crypto";
import type { A2ATaskState, Message } from "../domain/a2a-types.js";
import { DomainError, taskNotFound } from "../domain/errors.js";
import { isTerminalRunStatus } from "../domain/run-status.js";
import { persistedContextOf, persistTaskSnapshot, type PersistedCopy } from "../machine/persisted-task-snapshot.js";
import { applyTaskEvent, createTaskActor, restoreTaskActor, type TaskActor } from "../machine/task-actor.js";
import type { TaskContext } from "../machine/task-context.js";
import type { TaskEvent } from "../machine/task-events.js";
import type { TaskMachineInput } from "../machine/task-machine.js";
import { runStatusOf, stateMetaOf, type TaskSnapshot } from "../machine/task-projection.js";
import type { TaskReadPort } from "../store/task-read-port.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import {
  LeaseLostError,
  StaleWriteError,
  type TaskListPage,
  type TaskListQuery,
  type TaskRecordChanges,
  type TaskStore,
} from "../store/task-store.js";
import type { IdempotencySeed } from "./message-idempotency.js";
import { KeyedLock } from "./keyed-lock.js";
import { TaskLeases } from "./task-leases.js";
import { DEFAULT_LEASE_SETTINGS, type LeaseSettings } from "./lease-settings.js";
import type { TransitionHook } from "./transition-hook.js";
import { findTaskHistoryMessage, readTaskHistory } from "./task-history.js";
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
  /** The persisted copy of the snapshot last written (or staged to be), shared with the next (`persistTaskSnapshot`). */
  persisted?: PersistedCopy;
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
  /** Task execution leases; without them, a random owner id and the default timing. */
  leases?: LeaseSettings;
  clock?: () => Date;
}

/**
 * The only code that touches the TaskStore for tasks. Loads (rehydrates) tasks, and writes their
 * transitions with the version check: transitions are staged (applied to the machine, numbered in the
 * log) and flushed together in ONE store write when something must see them: a caller, a subscriber, or an
 * effect about to run (commit before notify, and before effect). Every write is published to the
 * transition hook after it is stored, so no reader ever sees a state that is not stored. The per-task lock
 * serializes all writes to one task; everything here but the reads must run under it, and nothing staged
 * outlives it: `withLock` flushes what its caller left staged, or drops it if the caller failed.
 *
 * Leases: the driver's locked sections are `fenced`: their writes carry the task's lease (owner, epoch), renew
 * it, and release it when the task stops being runnable; the store refuses them once another instance took
 * the lease (LeaseLostError: the task is dropped here). Everyone else's writes (replies, cancels, timeouts)
 * carry no fence: the version check alone keeps them from being lost or applied twice.
 */
export class TaskRepository implements TaskReadPort {
  private readonly live = new Map<string, LiveTask>();
  private readonly lock = new KeyedLock();
  private readonly leases: TaskLeases;
  readonly leaseSettings: LeaseSettings;

  constructor(private readonly options: TaskRepositoryOptions) {
    this.leaseSettings = options.leases ?? { instanceId: randomUUID(), ...DEFAULT_LEASE_SETTINGS };
    this.leases = new TaskLeases(options.store, this.leaseSettings, options.clock ?? (() => new Date()));
  }

  /** Serializes everything that touches one task; `fenced`: the driver's section, whose writes need the lease. */
  withLock<T>(taskId: string, fn: () => Promise<T>, options: { fenced?: boolean } = {}): Promise<T> {
    return this.lock.run(taskId, async () => {
      if (options.fenced) this.leases.enterSection(taskId);
      try {
        let result: T;
        try {
          result = await fn();
        } catch (err) {
          if (this.live.get(taskId)?.staged.length) this.passivate(taskId);
          throw err;
        }
        if (this.live.get(taskId)?.staged.length) await this.flush(taskId);
        return result;
      } finally {
        this.leases.leaveSection(taskId);
      }
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
    const { taskId, contextId, workflowId, workflowVersion, tenant, firstNode, message, at, idempotency } = task;
    const actor = createTaskActor({
      taskId,
      contextId,
      workflowId,
      ...(workflowVersion !== undefined ? { workflowVersion } : {}),
      tenant,
      firstNode,
      message,
    });
    const snapshot = actor.getSnapshot();
    const events = logEventsFor({ event: { type: "CREATED", at }, after: snapshot, firstSequence: 0, generation: 0 });
    const record: TaskRecord = {
      taskId,
      tenant,
      contextId,
      workflowId,
      ...(workflowVersion !== undefined ? { workflowVersion } : {}),
      version: events.length - 1,
      generation: generationAfter(events, 0),
      createdAt: at,
      eventLogSchemaVersion: 3,
      ...this.changesFor(snapshot, at),
      ...(idempotency ? { idempotencyKey: idempotency.key, requestFingerprint: idempotency.fingerprint } : {}),
    };
    this.live.set(taskId, {
      actor,
      record,
      staged: events,
      stagedAt: at,
      stored: false,
      persisted: { source: snapshot, persisted: record.snapshot },
    });
    return record;
  }

  /** The task's state and record, rehydrated from the store when it was passivated. */
  async load(taskId: string, tenant?: string): Promise<LiveTask> {
    let live = this.live.get(taskId);
    if (!live) {
      const record = await this.options.store.get(taskId);
      if (!record) throw taskNotFound(taskId);
      live = {
        actor: restoreTaskActor(record.snapshot, taskId),
        record,
        staged: [],
        stagedAt: record.updatedAt,
        stored: true,
      };
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
    const generation = generationAfter(live.staged, live.record.generation);
    for (const logged of logEventsFor({ event, before, after, firstSequence, generation })) live.staged.push(logged);
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
    const generation = generationAfter(events, live.record.generation);
    const changes = {
      ...this.changesFor(snapshot, live.stagedAt, live.persisted),
      ...(generation !== undefined ? { generation } : {}),
    };
    live.persisted = { source: snapshot, persisted: changes.snapshot };
    const version = events[events.length - 1]!.sequence;
    const fence = this.leases.fenceFor(taskId, changes, live.stored);
    try {
      if (live.stored) await this.options.store.commit(taskId, live.record.version, changes, events, fence);
      else
        await this.options.store.create(
          {
            ...live.record,
            ...changes,
            version,
            ...(fence?.expiresAt ? { lease: { ...fence, expiresAt: fence.expiresAt } } : {}),
          },
          events,
        );
    } catch (err) {
      this.passivate(taskId);
      if (err instanceof LeaseLostError) this.leases.lost(taskId);
      if (err instanceof StaleWriteError) {
        throw new DomainError(
          "conflict",
          `Task ${taskId} was changed concurrently; retry the request`,
          { taskId },
          { cause: err },
        );
      }
      throw err;
    }
    this.leases.written(taskId, fence);
    const { lease: held, ...committed } = live.record;
    const lease = fence ? (fence.expiresAt ? { ...fence, expiresAt: fence.expiresAt } : undefined) : held;
    live.record = { ...committed, ...changes, version, ...(lease ? { lease } : {}) };
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

  // ---------------------------------------------------------------- leases (task-leases.ts)

  holdsLease(taskId: string): boolean {
    return this.leases.holds(taskId);
  }

  heldLeaseCount(): number {
    return this.leases.heldCount();
  }

  /** Takes the task's lease if it is runnable and free or expired (epoch + 1); false when another instance holds it. */
  acquireLease(taskId: string): Promise<boolean> {
    return this.leases.acquire(taskId);
  }

  /**
   * Once per acquisition: whether the lease held now was taken from a holder that never released it (expired,
   * or this id's own from before a restart) and nothing was decided since. A node found started then was cut
   * short by that holder's death, not by a SIGTERM (which releases) nor a handler's retry (same holder).
   */
  takeLeaseFromDeadHolder(taskId: string): boolean {
    return this.leases.takeFromDeadHolder(taskId);
  }

  /** Gives the lease back (the driver stopped, or the process shuts down); a failure leaves it to expire. */
  async releaseLease(taskId: string): Promise<void> {
    const live = this.live.get(taskId);
    if (live && this.leases.holds(taskId)) {
      // A new object: the old one may have been published to readers already.
      const { lease: _released, ...record } = live.record;
      live.record = record;
    }
    await this.leases.release(taskId);
  }

  /** Heartbeat: one store command renews every lease held here. */
  renewLeases(): Promise<void> {
    return this.leases.renew();
  }

  /** After a heartbeat outage longer than the TTL: others may have taken these tasks, so drive none of them. */
  forgetLeases(): string[] {
    const ids = this.leases.forget();
    for (const id of ids) this.passivate(id);
    return ids;
  }

  /** The tasks driven here that a caller on any instance asked to cancel since. */
  cancellingLeasedTasks(): Promise<string[]> {
    return this.leases.cancelling();
  }

  leaseableTaskIds(limit: number): Promise<string[]> {
    return this.leases.leaseable(limit);
  }

  /** Claims a due timer for this instance; a claimer that dies leaves it due again one lease TTL later. */
  claimTimer(taskId: string): Promise<boolean> {
    return this.leases.claimTimer(taskId);
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

  historyOf(record: TaskRecord, limit?: number): Promise<Message[]> {
    return readTaskHistory(this.options.store, record, this.contextOf(record), limit);
  }

  /** A message of the task's history by id (a caller's retry is recognised however long ago it was sent). */
  historyMessage(live: LiveTask, messageId: string): Promise<Message | undefined> {
    return findTaskHistoryMessage(this.options.store, live.record, live.actor.getSnapshot().context, messageId);
  }

  findByIdempotencyKey(idempotencyKey: string): Promise<TaskRecord | null> {
    return this.options.store.findByIdempotencyKey(idempotencyKey);
  }

  list(query: TaskListQuery): Promise<TaskListPage> {
    return this.options.store.list(query);
  }

  /** Every task that is not terminal (start-up recovery). */
  /** Task ids whose durable timer is due at `now`. */
  dueTimers(now: Date, limit: number): Promise<string[]> {
    return this.options.store.dueTimers(now, limit);
  }

  // ------------------------------------------------------------------------------------------

  private changesFor(snapshot: TaskSnapshot, at: string, previous?: PersistedCopy): TaskRecordChanges {
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
      snapshot: persistTaskSnapshot(snapshot, previous),
      updatedAt: at,
      expireAt: isTerminalRunStatus(status) ? new Date(Date.parse(at) + this.options.retentionMs).toISOString() : null,
      timerDueAt: status === "paused" ? null : (context.timer?.dueAt ?? null), // paused: no timer fires
      ...(context.workflowVersion !== undefined ? { workflowVersion: context.workflowVersion } : {}),
    };
  }
}

/** The generation after `events` (the last one that carries it), else the one before them. */
function generationAfter(events: readonly RunEvent[], before: number | undefined): number | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const generation = events[i]!.a2a?.generation;
    if (generation !== undefined) return generation;
  }
  return before;
}
