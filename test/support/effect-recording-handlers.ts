// A HANDLERS_MODULE with one handler, `record-effect`, for the workflows in test/fixtures/chaos-workflows:
// each execution writes one document (task, node, attempt, idempotency key, instance) to its own MongoDB
// collection before it works for `params.ms`, so a test can count how often a node's effect ran and where.
// Loaded by the real CLI (src/main.ts) as `HANDLERS_MODULE`, with EFFECTS_COLLECTION set.
import { MongoClient } from "mongodb";
import { abortableSleep } from "../../src/domain/abortable-sleep.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";

const uri = process.env["MONGODB_URI"];
const dbName = process.env["MONGODB_DB"];
const collection = process.env["EFFECTS_COLLECTION"];
if (!uri || !dbName || !collection)
  throw new Error("effect-recording-host needs MONGODB_URI, MONGODB_DB and EFFECTS_COLLECTION");
const instanceId = process.env["INSTANCE_ID"] ?? "unnamed";
const effects = new MongoClient(uri).db(dbName).collection(collection);

// Not `pure`: the engine stores node.started on its own before the effect, as for any external effect.
const recordEffect: TaskHandler = async (ctx) => {
  await effects.insertOne({
    taskId: ctx.taskId,
    nodeId: ctx.nodeId,
    attempt: ctx.attempt,
    idempotencyKey: ctx.idempotencyKey,
    instanceId,
    at: new Date(),
  });
  const ms = typeof ctx.params["ms"] === "number" ? ctx.params["ms"] : 0;
  if (ms > 0) await abortableSleep(ms, ctx.signal);
  return {
    output: { by: instanceId },
    artifacts: [{ name: ctx.nodeId, parts: [{ kind: "text", text: `${ctx.nodeId} done` }] }],
  };
};

export const handlers = { "record-effect": recordEffect };
