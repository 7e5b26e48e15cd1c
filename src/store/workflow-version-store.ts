/**
 * Workflow definitions as each version was served (docs/workflows.md "Changing a workflow"). A run records the
 * `{workflowId, version}` it started on and every step reads that definition from here, on any instance, whatever
 * is deployed now. One document per version, written once; the same version with other content is refused.
 */
export interface StoredWorkflowVersion {
  workflowId: string;
  version: string;
  /**
   * The definition as its author wrote it: `${NAME}` references stay references (their configured values may be
   * secrets), and each instance expands them with its own settings when it walks the definition.
   */
  definition: Record<string, unknown>;
  /** The node kinds it uses, so a deploy that drops one is reported like a missing handler. */
  kinds: string[];
  /** SHA-256 of its canonical JSON: two stored contents are the same exactly when their digests are. */
  digest: string;
  storedAt: string;
  /** When an instance serving it last said so (at its start, then at each retention pass while it runs). */
  servedAt: string;
}

export interface VersionRuns {
  live: number;
  ended: number;
}

export interface WorkflowVersionKey {
  workflowId: string;
  version: string;
}

/** The same version is stored with other content: the start is refused, naming both. */
export class WorkflowVersionConflictError extends Error {
  override readonly name = "WorkflowVersionConflictError";
  constructor(
    readonly existing: Pick<StoredWorkflowVersion, "workflowId" | "version" | "digest" | "storedAt">,
    readonly offered: Pick<StoredWorkflowVersion, "digest">,
  ) {
    super(
      `workflow "${existing.workflowId}" version "${existing.version}" is already stored with other content ` +
        `(stored ${existing.storedAt}, digest ${existing.digest}; this deploy's digest ${offered.digest}): ` +
        `give the changed definition a new version, or put back the one stored`,
    );
  }
}

export interface WorkflowVersionStore {
  /**
   * Stores the version if it is not stored yet; if it is with the same digest, only moves its `servedAt`; if it is
   * with another digest, throws WorkflowVersionConflictError and changes nothing.
   */
  put(version: StoredWorkflowVersion): Promise<void>;
  get(workflowId: string, version: string): Promise<StoredWorkflowVersion | null>;
  /** Every stored version, without its definition (`definition` is `{}`): what the console and the retention read. */
  list(): Promise<StoredWorkflowVersion[]>;
  /** Moves `servedAt` of these versions: an instance still serves them. */
  touch(keys: readonly WorkflowVersionKey[], at: string): Promise<void>;
  /** The tasks the store still holds that record this version: `live` (not ended) and `ended` (kept for retention). */
  countRuns(workflowId: string, version: string): Promise<VersionRuns>;
  remove(workflowId: string, version: string): Promise<void>;
}

/** In-process versions beside the memory task store, which counts their runs. */
export class MemoryWorkflowVersionStore implements WorkflowVersionStore {
  private readonly versions = new Map<string, StoredWorkflowVersion>();

  constructor(
    private readonly runs: (workflowId: string, version: string) => VersionRuns = () => ({ live: 0, ended: 0 }),
  ) {}

  async put(version: StoredWorkflowVersion): Promise<void> {
    const key = keyOf(version.workflowId, version.version);
    const existing = this.versions.get(key);
    if (!existing) this.versions.set(key, structuredClone(version));
    else if (existing.digest !== version.digest) throw new WorkflowVersionConflictError(existing, version);
    else this.versions.set(key, { ...existing, servedAt: version.servedAt });
  }

  async get(workflowId: string, version: string): Promise<StoredWorkflowVersion | null> {
    const found = this.versions.get(keyOf(workflowId, version));
    return found ? structuredClone(found) : null;
  }

  async list(): Promise<StoredWorkflowVersion[]> {
    return [...this.versions.values()].map((v) => ({ ...v, definition: {} }));
  }

  async touch(keys: readonly WorkflowVersionKey[], at: string): Promise<void> {
    for (const { workflowId, version } of keys) {
      const key = keyOf(workflowId, version);
      const existing = this.versions.get(key);
      if (existing) this.versions.set(key, { ...existing, servedAt: at });
    }
  }

  async countRuns(workflowId: string, version: string): Promise<VersionRuns> {
    return this.runs(workflowId, version);
  }

  async remove(workflowId: string, version: string): Promise<void> {
    this.versions.delete(keyOf(workflowId, version));
  }
}

/** One string per version: a JSON pair, so no workflow id or version can make two keys collide. */
export function keyOf(workflowId: string, version: string): string {
  return JSON.stringify([workflowId, version]);
}
