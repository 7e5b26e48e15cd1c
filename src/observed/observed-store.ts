import type { Logger } from "../observability/logger.js";
import { everyLabelSet, labelSets, startAtZero } from "../observability/metrics.js";
import { noteRequest } from "../observability/request-notes.js";
import { inSpan } from "../observability/spans.js";
import type { Telemetry } from "../observability/telemetry.js";
import type { DeadLetterReason, PushConfigStore } from "../store/push-config-store.js";
import type { TaskRecord } from "../domain/task-record.js";
import type { TaskStore } from "../store/task-store.js";

/**
 * The task store with telemetry around every command: latency by command and outcome, a child span for each
 * write (create, commit), the task id and tenant noted on the inbound call, a failure logged with the
 * operation and task it was about, and each lease taken from a holder that never released it (a takeover).
 * Behaviour is unchanged: results and errors pass through as they are.
 */
export function observedTaskStore(store: TaskStore, telemetry: Telemetry, logger: Logger): TaskStore {
  const { tracer, metrics } = telemetry;
  const storeLabels = labelSets(["command", "outcome", "store"]);
  startAtZero(metrics.leaseTakeovers);
  async function timed<T>(
    command: string,
    taskId: string | undefined,
    work: () => Promise<T>,
    traced = false,
  ): Promise<T> {
    const started = performance.now();
    let outcome = "ok";
    try {
      return traced
        ? await inSpan(
            tracer,
            `store.${command}`,
            {
              "db.operation.name": command,
              "db.system.name": store.kind,
              ...(taskId ? { "a2a.task.id": taskId } : {}),
            },
            work,
          )
        : await work();
    } catch (err) {
      outcome = (err as Error).name === "Error" ? "error" : (err as Error).name;
      // Stale writes and duplicates are part of the protocol (the caller retries or answers); the rest is an outage.
      if (outcome === "error" || outcome.startsWith("Mongo"))
        logger.warn({ err, operation: `store.${command}`, ...(taskId ? { taskId } : {}) }, `store ${command} failed`);
      throw err;
    } finally {
      metrics.storeDuration.record((performance.now() - started) / 1000, storeLabels(command, outcome, store.kind));
    }
  }
  const note = (record: TaskRecord | null): TaskRecord | null => {
    if (record) noteRequest({ taskId: record.taskId, contextId: record.contextId, tenant: record.tenant });
    return record;
  };
  return {
    kind: store.kind,
    // Optional members pass through as they are, so the wrapper never hides what the store can do.
    ...(store.limits ? { limits: store.limits } : {}),
    ...(store.openCommitFeed ? { openCommitFeed: store.openCommitFeed.bind(store) } : {}),
    ...(store.workflowVersions ? { workflowVersions: store.workflowVersions } : {}),
    ...(store.tenantUsage ? { tenantUsage: store.tenantUsage } : {}),
    init: () => store.init(),
    ping: () => (store.ping ? store.ping() : Promise.resolve()),
    create: (record, events) => {
      noteRequest({ taskId: record.taskId, contextId: record.contextId, tenant: record.tenant });
      return timed("create", record.taskId, () => store.create(record, events), true);
    },
    commit: (taskId, expectedVersion, changes, events, fence) =>
      timed("commit", taskId, () => store.commit(taskId, expectedVersion, changes, events, fence), true),
    get: async (taskId) => note(await timed("get", taskId, () => store.get(taskId))),
    readEvents: (taskId, fromSequence, limit) =>
      timed("readEvents", taskId, () => store.readEvents(taskId, fromSequence, limit)),
    readHistory: (taskId, fromIndex, upToVersion) =>
      timed("readHistory", taskId, () => store.readHistory(taskId, fromIndex, upToVersion)),
    findHistoryMessage: (taskId, messageId, upToVersion) =>
      timed("findHistoryMessage", taskId, () => store.findHistoryMessage(taskId, messageId, upToVersion)),
    findByIdempotencyKey: (key) => timed("findByIdempotencyKey", undefined, () => store.findByIdempotencyKey(key)),
    list: (query) => {
      noteRequest({ tenant: query.tenant });
      return timed("list", undefined, () => store.list(query));
    },
    listActive: () => timed("listActive", undefined, () => store.listActive()),
    dueTimers: (now, limit) => timed("dueTimers", undefined, () => store.dueTimers(now, limit)),
    claimTimer: (taskId, now, retryAt) => timed("claimTimer", taskId, () => store.claimTimer(taskId, now, retryAt)),
    acquireLease: async (taskId, owner, now, expiresAt) => {
      const lease = await timed("acquireLease", taskId, () => store.acquireLease(taskId, owner, now, expiresAt));
      if (lease?.unreleased) metrics.leaseTakeovers.add(1);
      return lease;
    },
    renewLeases: (owner, taskIds, expiresAt) =>
      timed("renewLeases", undefined, () => store.renewLeases(owner, taskIds, expiresAt)),
    releaseLease: (taskId, owner, epoch) =>
      timed("releaseLease", taskId, () => store.releaseLease(taskId, owner, epoch)),
    cancellingTaskIds: (taskIds) => timed("cancellingTaskIds", undefined, () => store.cancellingTaskIds(taskIds)),
    leaseableTaskIds: (now, owner, limit) =>
      timed("leaseableTaskIds", undefined, () => store.leaseableTaskIds(now, owner, limit)),
    close: () => store.close(),
  };
}

/** Every reason a push is given up for, each started at 0 (a record, so a new reason must be added here). */
const DEAD_LETTER_REASONS = Object.keys({
  "max-attempts": true,
  "max-age": true,
  "not-retryable": true,
} satisfies Record<DeadLetterReason, true>);

/** Push configs with the dead-letter counter (the worker records every give-up through `addDeadLetter`). */
export function observedPushConfigStore(configs: PushConfigStore, telemetry: Telemetry): PushConfigStore {
  startAtZero(telemetry.metrics.pushDeadLetters, everyLabelSet({ reason: DEAD_LETTER_REASONS }));
  return new Proxy(configs, {
    get(target, property, receiver) {
      if (property === "addDeadLetter") {
        return async (letter: Parameters<PushConfigStore["addDeadLetter"]>[0]) => {
          await target.addDeadLetter(letter);
          telemetry.metrics.pushDeadLetters.add(1, { reason: letter.reason });
        };
      }
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
