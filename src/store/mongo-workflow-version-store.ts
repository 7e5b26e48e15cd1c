import { MongoServerError, type Collection, type Db } from "mongodb";
import { TERMINAL_RUN_STATUSES } from "../domain/run-status.js";
import { DUPLICATE_KEY, type TaskDocument } from "./mongo-task-documents.js";
import {
  keyOf,
  WorkflowVersionConflictError,
  type StoredWorkflowVersion,
  type VersionRuns,
  type WorkflowVersionKey,
  type WorkflowVersionStore,
} from "./workflow-version-store.js";

/**
 * One document per version in `workflow_versions`, keyed by the pair. The definition is kept as its canonical JSON
 * text: a definition's keys may hold dots (`when: { output: { "pricing.total": … } }`), which a document field
 * name should not. Shares the task store's client, which owns the connection.
 */
interface VersionDocument extends Omit<StoredWorkflowVersion, "definition"> {
  _id: string;
  definitionJson: string;
}

export class MongoWorkflowVersionStore implements WorkflowVersionStore {
  private readonly versions: Collection<VersionDocument>;
  private readonly tasks: Collection<TaskDocument>;

  constructor(db: Db) {
    this.versions = db.collection<VersionDocument>("workflow_versions");
    this.tasks = db.collection<TaskDocument>("tasks");
  }

  async put(version: StoredWorkflowVersion): Promise<void> {
    const { definition, ...rest } = version;
    const doc: VersionDocument = {
      ...rest,
      _id: keyOf(version.workflowId, version.version),
      definitionJson: JSON.stringify(definition),
    };
    try {
      await this.versions.insertOne(doc);
      return;
    } catch (err) {
      if (!(err instanceof MongoServerError && err.code === DUPLICATE_KEY)) throw err;
    }
    // Stored already (by an earlier start, or another instance just now): the same content, or a conflict.
    const moved = await this.versions.updateOne(
      { _id: doc._id, digest: doc.digest },
      { $set: { servedAt: doc.servedAt } },
    );
    if (moved.matchedCount === 1) return;
    const existing = await this.versions.findOne({ _id: doc._id });
    if (existing) throw new WorkflowVersionConflictError(existing, version);
    // Removed between the two commands (retention): store it again.
    await this.versions.insertOne(doc);
  }

  async get(workflowId: string, version: string): Promise<StoredWorkflowVersion | null> {
    const doc = await this.versions.findOne({ _id: keyOf(workflowId, version) });
    if (!doc) return null;
    const { _id, definitionJson, ...rest } = doc;
    return { ...rest, definition: JSON.parse(definitionJson) as Record<string, unknown> };
  }

  async list(): Promise<StoredWorkflowVersion[]> {
    const docs = await this.versions.find({}, { projection: { definitionJson: 0 } }).toArray();
    return docs.map(({ _id, definitionJson: _json, ...rest }) => ({ ...rest, definition: {} }));
  }

  async touch(keys: readonly WorkflowVersionKey[], at: string): Promise<void> {
    if (keys.length === 0) return;
    await this.versions.updateMany(
      { _id: { $in: keys.map((k) => keyOf(k.workflowId, k.version)) } },
      { $set: { servedAt: at } },
    );
  }

  async countRuns(workflowId: string, version: string): Promise<VersionRuns> {
    const ended = [...TERMINAL_RUN_STATUSES];
    const [live, done] = await Promise.all([
      this.tasks.countDocuments({ workflowId, workflowVersion: version, status: { $nin: ended } }),
      this.tasks.countDocuments({ workflowId, workflowVersion: version, status: { $in: ended } }),
    ]);
    return { live, ended: done };
  }

  async remove(workflowId: string, version: string): Promise<void> {
    await this.versions.deleteOne({ _id: keyOf(workflowId, version) });
  }
}
