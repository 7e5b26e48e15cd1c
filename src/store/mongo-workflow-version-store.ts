import { createHash } from "node:crypto";
import { MongoServerError, type Collection, type Db } from "mongodb";
import { canonicalJson } from "../domain/canonical-json.js";
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

/**
 * A document the previous release wrote (2026-11-28, before these fields): `_id` `<workflowId>@<version>`, the
 * definition as an object, no digest or times. Its runs still name it, so it is read, never rewritten.
 */
interface EarlierVersionDocument {
  _id: string;
  workflowId: string;
  version: string;
  definition: Record<string, unknown>;
  kinds: string[];
}

/** What the previous release leaves unsaid: a time before any this release writes. */
const BEFORE_VERSIONS = "1970-01-01T00:00:00.000Z";

/** A stored document of either release, in this release's shape. */
function fromDocument(doc: VersionDocument | EarlierVersionDocument, withDefinition: boolean): StoredWorkflowVersion {
  if (!("definition" in doc)) {
    const { _id, definitionJson, ...rest } = doc as VersionDocument;
    return { ...rest, definition: withDefinition ? (JSON.parse(definitionJson) as Record<string, unknown>) : {} };
  }
  const { workflowId, version, definition, kinds } = doc;
  return {
    workflowId,
    version,
    definition: withDefinition ? definition : {},
    kinds,
    digest: createHash("sha256").update(canonicalJson(definition)).digest("hex"),
    storedAt: BEFORE_VERSIONS,
    servedAt: BEFORE_VERSIONS,
  };
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
    const doc =
      (await this.versions.findOne({ _id: keyOf(workflowId, version) })) ??
      // A run the previous release created names a version stored under that release's key.
      ((await this.versions.findOne({ _id: `${workflowId}@${version}` })) as EarlierVersionDocument | null);
    return doc ? fromDocument(doc, true) : null;
  }

  async list(): Promise<StoredWorkflowVersion[]> {
    const docs = await this.versions.find({}, { projection: { definitionJson: 0 } }).toArray();
    return docs.map((doc) => fromDocument(doc as VersionDocument | EarlierVersionDocument, false));
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
    await this.versions.deleteMany({ _id: { $in: [keyOf(workflowId, version), `${workflowId}@${version}`] } });
  }
}
