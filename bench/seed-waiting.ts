// The waiting tasks of scale figures (a) and (b): copies of one real waiting task, each with its own ids,
// written straight into the store (not through HTTP), fast enough for 100 000 of them.
import { randomUUID } from "node:crypto";
import { BSON, MongoClient, type Document } from "mongodb";
import { connectMongoStore } from "../src/store/open-store.js";
import type { RunEvent, TaskRecord } from "../src/store/task-store.js";

const BULK_BATCH = 1000;
const STORE_API_CONCURRENCY = 64;
const WRITE_COMMANDS = new Set(["insert", "update", "delete", "findAndModify", "bulkWrite"]);

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Copies the waiting task `templateId` `count` times. The first copy goes through the store API
 * (`TaskStore.create`) with the driver's command monitoring on. When that create wrote by inserts only, the
 * other copies are those insert documents with fresh ids, 1 000 to an `insertMany`, whatever the store's
 * layout (one collection or several); otherwise every copy goes through the store API.
 */
export async function seedWaiting(uri: string, dbName: string, templateId: string, count: number): Promise<{ perSec: number; bulk: boolean }> {
  const writes: Document[] = [];
  let capturing = false;
  const seeder = await connectMongoStore(uri, dbName, undefined, (event) => {
    if (capturing && WRITE_COMMANDS.has(event.commandName)) writes.push(event.command);
  });
  const client = new MongoClient(uri);
  try {
    const record = await seeder.store.get(templateId);
    if (!record) throw new Error(`template task ${templateId} not found`);
    const template = JSON.stringify({ record, events: await seeder.store.readEvents(templateId, 0) });
    const copy = (): { record: TaskRecord; events: RunEvent[] } => {
      const c = JSON.parse(template.replaceAll(templateId, randomUUID()).replaceAll(record.contextId, randomUUID())) as { record: TaskRecord; events: RunEvent[] };
      c.record.idempotencyKey = randomUUID();
      for (const event of c.events) event.eventId = randomUUID();
      return c;
    };
    const started = performance.now();
    const first = copy();
    capturing = true;
    await seeder.store.create(first.record, first.events);
    capturing = false;
    const bulk = writes.length > 0 && writes.every((w) => typeof w["insert"] === "string" && Array.isArray(w["documents"]));
    if (bulk) {
      const ids = [first.record.taskId, first.record.contextId, first.record.idempotencyKey!, ...first.events.map((e) => e.eventId)];
      const pattern = new RegExp(ids.map(escapeRegExp).join("|"), "g");
      const inserts = writes.map((w) => ({ collection: String(w["insert"]), text: BSON.EJSON.stringify(w["documents"], { relaxed: false }) }));
      const db = client.db(dbName);
      for (let done = 1; done < count; ) {
        const n = Math.min(BULK_BATCH, count - done);
        // One map of fresh ids per copy, the same across the collections it spans.
        const fresh = Array.from({ length: n }, () => new Map(ids.map((id) => [id, randomUUID()])));
        for (const insert of inserts) {
          const docs = fresh.flatMap((m) => BSON.EJSON.parse(insert.text.replace(pattern, (id) => m.get(id)!), { relaxed: false }) as Document[]);
          await db.collection(insert.collection).insertMany(docs, { ordered: false });
        }
        done += n;
      }
    } else {
      let next = 1;
      await Promise.all(
        Array.from({ length: STORE_API_CONCURRENCY }, async () => {
          while (next < count) {
            next++;
            const c = copy();
            await seeder.store.create(c.record, c.events);
          }
        }),
      );
    }
    return { perSec: Math.round((count / (performance.now() - started)) * 1000), bulk };
  } finally {
    await client.close();
    await seeder.store.close();
  }
}
