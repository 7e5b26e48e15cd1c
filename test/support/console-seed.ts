import { randomUUID } from "node:crypto";
import type { RunEvent, TaskRecord } from "../../src/domain/task-record.js";
import type { TaskStore } from "../../src/store/task-store.js";

/**
 * Many tasks quickly, for the console's paging tests and its bench: copies of a real task (its snapshot and
 * log, so titles, nodes and details read as they would), each with its own id, tenant and timestamps, written
 * straight to the store. `at(i)` gives task i's createdAt/updatedAt (distinct, so the order is known).
 */
export async function seedCopies(
  store: TaskStore,
  templateId: string,
  count: number,
  options: { tenant?: (i: number) => string; at?: (i: number) => string; concurrency?: number } = {},
): Promise<TaskRecord[]> {
  const template = await store.get(templateId);
  if (!template) throw new Error(`no template task ${templateId}`);
  const events = await store.readEvents(templateId, 0);
  const base = Date.now() - count * 1000;
  const at = options.at ?? ((i: number) => new Date(base + i * 1000).toISOString());
  const records: TaskRecord[] = [];
  const concurrency = options.concurrency ?? 32;
  for (let start = 0; start < count; start += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, count - start) }, (_, k) => start + k).map((i) => {
      const taskId = randomUUID();
      const when = at(i);
      const record: TaskRecord = {
        ...structuredClone(template),
        taskId,
        tenant: options.tenant?.(i) ?? template.tenant,
        a2a: { ...template.a2a, taskId, runId: taskId, updatedAt: when },
        createdAt: when,
        updatedAt: when,
        idempotencyKey: null,
        requestFingerprint: null,
        lease: null,
        expireAt: null,
      };
      const log: RunEvent[] = events.map((e) => ({
        ...structuredClone(e),
        eventId: `${taskId}:${e.sequence}`,
        runId: taskId,
      }));
      records.push(record);
      return store.create(record, log);
    });
    await Promise.all(batch);
  }
  return records;
}

/** A commit that only moves a task's updatedAt (as any transition would): the console's order changes. */
export async function touch(store: TaskStore, record: TaskRecord, at = new Date().toISOString()): Promise<TaskRecord> {
  const current = (await store.get(record.taskId))!;
  const sequence = current.version + 1;
  const event: RunEvent = {
    eventId: `${record.taskId}:${sequence}`,
    runId: record.taskId,
    type: "node.progress",
    payload: { touched: true },
    timestamp: at,
    sequence,
  };
  await store.commit(
    record.taskId,
    current.version,
    {
      status: current.status,
      a2a: { ...current.a2a, updatedAt: at },
      snapshot: current.snapshot,
      updatedAt: at,
      expireAt: current.expireAt ?? null,
      timerDueAt: current.timerDueAt ?? null,
    },
    [event],
  );
  return (await store.get(record.taskId))!;
}
