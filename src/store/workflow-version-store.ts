import { MongoServerError, type Collection, type Db } from "mongodb";
import { canonicalJson } from "../domain/canonical-json.js";
import { DomainError } from "../domain/errors.js";
import { workflowVersionKey } from "../domain/workflow-version.js";

/** One stored version of one workflow: what a run pinned to it walks, whatever is deployed now. */
export interface StoredWorkflowVersion {
  workflowId: string;
  version: string;
  definition: unknown;
  /** The node kinds the definition uses. */
  kinds: string[];
}

/** Every definition a host has served, kept so a run keeps walking the one it started with. */
export interface WorkflowVersionStore {
  /**
   * Stores each version unless already there (idempotent). The same version stored before with other content
   * is refused (DomainError "internal") naming the workflow and version; nothing of that call is half-checked.
   */
  register(versions: readonly StoredWorkflowVersion[]): Promise<void>;
  /** One stored version, or undefined. */
  get(workflowId: string, version: string): Promise<StoredWorkflowVersion | undefined>;
}

function conflict(existing: StoredWorkflowVersion, offered: StoredWorkflowVersion): DomainError {
  return new DomainError(
    "internal",
    `workflow "${offered.workflowId}" version "${offered.version}" is already stored with other content: ` +
      `give the changed definition a new version (stored: ${canonicalJson(existing.definition).slice(0, 200)}; ` +
      `this deploy: ${canonicalJson(offered.definition).slice(0, 200)})`,
  );
}

function sameContent(a: StoredWorkflowVersion, b: StoredWorkflowVersion): boolean {
  return canonicalJson(a.definition) === canonicalJson(b.definition);
}

export class MemoryWorkflowVersionStore implements WorkflowVersionStore {
  private readonly byKey = new Map<string, StoredWorkflowVersion>();

  async register(versions: readonly StoredWorkflowVersion[]): Promise<void> {
    for (const v of versions) {
      const existing = this.byKey.get(workflowVersionKey(v.workflowId, v.version));
      if (existing && !sameContent(existing, v)) throw conflict(existing, v);
    }
    for (const v of versions) {
      const key = workflowVersionKey(v.workflowId, v.version);
      if (!this.byKey.has(key)) this.byKey.set(key, structuredClone(v));
    }
  }

  async get(workflowId: string, version: string): Promise<StoredWorkflowVersion | undefined> {
    const found = this.byKey.get(workflowVersionKey(workflowId, version));
    return found && structuredClone(found);
  }
}

interface VersionDocument extends StoredWorkflowVersion {
  _id: string;
}

const DUPLICATE_KEY = 11000;

/** `workflow_versions`, one document per `<workflowId>@<version>`; the unique `_id` makes each insert idempotent. */
export class MongoWorkflowVersionStore implements WorkflowVersionStore {
  private readonly versions: Collection<VersionDocument>;

  constructor(db: Db) {
    this.versions = db.collection<VersionDocument>("workflow_versions");
  }

  async register(versions: readonly StoredWorkflowVersion[]): Promise<void> {
    for (const v of versions) {
      const existing = await this.get(v.workflowId, v.version);
      if (existing && !sameContent(existing, v)) throw conflict(existing, v);
    }
    for (const v of versions) {
      const doc: VersionDocument = { _id: workflowVersionKey(v.workflowId, v.version), ...v };
      try {
        await this.versions.insertOne(doc);
      } catch (err) {
        if (!(err instanceof MongoServerError && err.code === DUPLICATE_KEY)) throw err;
        // Another instance stored it meanwhile: the same content is fine, other content refuses the start.
        const existing = await this.get(v.workflowId, v.version);
        if (existing && !sameContent(existing, v)) throw conflict(existing, v);
      }
    }
  }

  async get(workflowId: string, version: string): Promise<StoredWorkflowVersion | undefined> {
    const doc = await this.versions.findOne({ _id: workflowVersionKey(workflowId, version) });
    if (!doc) return undefined;
    const { workflowId: id, version: v, definition, kinds } = doc;
    return { workflowId: id, version: v, definition, kinds };
  }
}
