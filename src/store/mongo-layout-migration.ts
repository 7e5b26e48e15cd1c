import type { Db } from "mongodb";
import { toEventDocument, type EventDocument, type TaskDocument } from "./mongo-task-documents.js";
import type { RunEvent } from "../domain/task-record.js";

const LAYOUT_ID = "task-layout";
/** 1: the event log inside each task document (`events`); 2: the log in `task_events`. */
const CURRENT_LAYOUT = 2;

/**
 * Moves the event logs of a database written by the first layout (an `events` array in each task document)
 * into `task_events`, once; a marker in `store_meta` records that it is done, so later starts cost one read.
 * Idempotent: a start killed half-way replaces what it already copied and finishes.
 */
export async function migrateTaskLayout(db: Db, writer: string): Promise<number> {
  const meta = db.collection<{ _id: string; version: number }>("store_meta");
  if (((await meta.findOne({ _id: LAYOUT_ID }))?.version ?? 0) >= CURRENT_LAYOUT) return 0;
  const tasks = db.collection<TaskDocument & { events?: RunEvent[] }>("tasks");
  const events = db.collection<EventDocument>("task_events");
  let moved = 0;
  for await (const doc of tasks.find({ events: { $exists: true } }, { projection: { events: 1, expireAt: 1 } })) {
    const log = doc.events ?? [];
    const expireAt = doc.expireAt ? doc.expireAt.toISOString() : null;
    if (log.length > 0) {
      await events.bulkWrite(
        log.map((event) => ({
          replaceOne: {
            filter: { taskId: doc._id, sequence: event.sequence },
            replacement: toEventDocument(doc._id, event, writer, expireAt),
            upsert: true,
          },
        })),
        { ordered: false },
      );
    }
    await tasks.updateOne({ _id: doc._id }, { $unset: { events: "" } });
    moved++;
  }
  await meta.updateOne({ _id: LAYOUT_ID }, { $set: { version: CURRENT_LAYOUT } }, { upsert: true });
  return moved;
}
