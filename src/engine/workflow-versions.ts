import { DomainError } from "../domain/errors.js";
import type { Logger } from "../observability/logger.js";
import {
  WorkflowVersionConflictError,
  type StoredWorkflowVersion,
  type WorkflowVersionStore,
} from "../store/workflow-version-store.js";
import type { WorkflowDefinition } from "../workflows/workflow-types.js";
import { kindsOf, versionOf, walkable, type DeployContext } from "./definition-needs.js";
import type { WorkflowCatalog } from "./workflow-catalog.js";
import { WorkflowLoadError } from "./workflow-load-error.js";

/** The definition a run walks, and what of it this instance lacks. */
export interface PinnedDefinition {
  workflowId: string;
  /** Undefined for a run created before versions were recorded (it walks the deployed definition). */
  version?: string;
  /** Whether this is the version this instance serves to new runs. */
  deployed: boolean;
  /** Undefined when the version is not stored (then every node lacks it). */
  workflow?: WorkflowDefinition;
  /** Why this instance cannot run `nodeId` (a handler, peer, variable or node kind it lacks), or undefined. */
  lacking(nodeId: string): string | undefined;
}

/** A version live runs use, and what this deploy lacks for it. */
export interface LiveVersion {
  workflowId: string;
  version: string;
  deployed: boolean;
  /** Runs on it that have not ended. */
  liveRuns: number;
  /** Runs on it that ended and are kept until their retention passes. */
  endedRuns: number;
  storedAt: string;
  /** Nodes this instance cannot run, each with why. */
  lacks: Array<{ nodeId: string; reason: string }>;
}

interface Deployed {
  version: string;
  digest: string;
  asWritten: WorkflowDefinition;
}

/** A version not used by a task for this long after an instance last served it is removed. */
const MIN_UNSERVED_MS = 60 * 60 * 1000;
/** How often each instance marks its versions served and removes the unused ones. */
const RETENTION_PASS_MS = 10 * 60 * 1000;

/**
 * Workflow versions (docs/workflows.md "Changing a workflow"): the deployed definitions stored before they are
 * served, and the definition each run is pinned to, read from the store and cached, whatever is deployed now. Code a
 * stored version needs that this deploy lacks (a handler, a peer, a `${NAME}` variable, a node kind) is known per
 * node: the driver leaves such a node to an instance that has it.
 */
export class WorkflowVersions {
  private readonly deployedById = new Map<string, Deployed>();
  private readonly cache = new Map<string, Promise<PinnedDefinition>>();
  /** The stored versions read so far, for answers that cannot wait for the store (`known`). */
  private readonly resolved = new Map<string, WorkflowDefinition>();
  private retention: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: {
      catalog: WorkflowCatalog;
      store: WorkflowVersionStore;
      deploy: Omit<DeployContext, "kinds">;
      clock?: () => Date;
    },
  ) {
    for (const workflow of options.catalog.list()) {
      const asWritten = options.catalog.asWritten(workflow.id) ?? workflow;
      this.deployedById.set(workflow.id, { ...versionOf(asWritten), asWritten });
    }
  }

  /** The node kinds this instance has. */
  get kinds(): WorkflowCatalog["kinds"] {
    return this.options.catalog.kinds;
  }

  /** The version new runs of `workflowId` take here. */
  deployedVersion(workflowId: string): string | undefined {
    return this.deployedById.get(workflowId)?.version;
  }

  /**
   * Before serving: stores every deployed definition (an idempotent insert). A version stored with other content
   * stops the start: one WorkflowLoadError naming each such workflow and both digests.
   */
  async register(): Promise<void> {
    const at = this.now();
    const problems: string[] = [];
    // One insert per definition, all at once; a conflict is collected, anything else (the store is down) stops the start.
    await Promise.all(
      [...this.deployedById].map(async ([workflowId, d]) => {
        try {
          await this.options.store.put({
            workflowId,
            version: d.version,
            definition: d.asWritten as unknown as Record<string, unknown>,
            kinds: kindsOf(d.asWritten),
            digest: d.digest,
            storedAt: at,
            servedAt: at,
          });
        } catch (err) {
          if (!(err instanceof WorkflowVersionConflictError)) throw err;
          problems.push(err.message);
        }
      }),
    );
    problems.sort();
    if (problems.length > 0) throw new WorkflowLoadError(problems);
  }

  /** What `register` would refuse, read without writing (`check`): each deployed version stored with other content. */
  async conflicts(): Promise<string[]> {
    const problems: string[] = [];
    for (const [workflowId, d] of this.deployedById) {
      const stored = await this.options.store.get(workflowId, d.version);
      if (stored && stored.digest !== d.digest) problems.push(new WorkflowVersionConflictError(stored, d).message);
    }
    return problems;
  }

  /** The definition a task walks: its recorded version (read from the store, cached), or the deployed one. */
  ofTask(task: { taskId: string; workflowId: string; workflowVersion?: string }): Promise<PinnedDefinition> {
    const { workflowId, workflowVersion } = task;
    const deployed = this.deployedById.get(workflowId);
    if (workflowVersion === undefined || deployed?.version === workflowVersion) {
      const workflow = this.options.catalog.ofTask(task);
      return Promise.resolve({
        workflowId,
        ...(workflowVersion !== undefined ? { version: workflowVersion } : {}),
        deployed: true,
        workflow,
        lacking: () => undefined,
      });
    }
    return this.stored(workflowId, workflowVersion);
  }

  /**
   * The definition a task walks when it is at hand without reading the store (the deployed one, or a version read
   * before); else the deployed definition of its workflow, if any (titles of a list row, not decisions).
   */
  known(task: { workflowId: string; workflowVersion?: string }): WorkflowDefinition | undefined {
    const stored =
      task.workflowVersion === undefined
        ? undefined
        : this.resolved.get(cacheKey(task.workflowId, task.workflowVersion));
    return stored ?? this.options.catalog.get(task.workflowId);
  }

  /** A version of a workflow, deployed or stored; undefined when neither. */
  async find(workflowId: string, version: string): Promise<PinnedDefinition | undefined> {
    const pinned =
      this.deployedById.get(workflowId)?.version === version
        ? await this.ofTask({ taskId: "", workflowId, workflowVersion: version })
        : await this.stored(workflowId, version);
    return pinned.workflow ? pinned : undefined;
  }

  /** Every stored version with runs that have not ended, with their counts and what this deploy lacks for them. */
  async live(): Promise<LiveVersion[]> {
    const counted = await Promise.all(
      (await this.options.store.list()).map(async (stored) => ({
        stored,
        runs: await this.options.store.countRuns(stored.workflowId, stored.version),
      })),
    );
    const out: LiveVersion[] = [];
    for (const { stored, runs } of counted) {
      if (runs.live === 0) continue;
      const deployed = this.deployedById.get(stored.workflowId)?.version === stored.version;
      // The deployed version lacks nothing here: it was checked when this instance loaded it.
      const pinned = deployed ? undefined : await this.stored(stored.workflowId, stored.version);
      const nodes = pinned?.workflow?.nodes.map((n) => n.id) ?? [];
      out.push({
        workflowId: stored.workflowId,
        version: stored.version,
        deployed,
        liveRuns: runs.live,
        endedRuns: runs.ended,
        storedAt: stored.storedAt,
        lacks: nodes.flatMap((nodeId) => {
          const reason = pinned?.lacking(nodeId);
          return reason ? [{ nodeId, reason }] : [];
        }),
      });
    }
    return out.sort((a, b) => a.workflowId.localeCompare(b.workflowId) || a.storedAt.localeCompare(b.storedAt));
  }

  /**
   * Retention: marks the deployed versions as served now, then removes each stored version that no task the store
   * still holds records (live or retained after its end) and that no instance has served for `unservedMs` (at least
   * an hour), so an instance still serving it, whose next new run would record it, keeps it. Answers the removed ones.
   */
  async retire(unservedMs: number): Promise<Array<{ workflowId: string; version: string }>> {
    const { store } = this.options;
    const now = this.now();
    await store.touch(
      [...this.deployedById].map(([workflowId, d]) => ({ workflowId, version: d.version })),
      now,
    );
    const before = Date.parse(now) - Math.max(unservedMs, MIN_UNSERVED_MS);
    const removed: Array<{ workflowId: string; version: string }> = [];
    for (const stored of await store.list()) {
      if (this.deployedById.get(stored.workflowId)?.version === stored.version) continue;
      if (Date.parse(stored.servedAt) > before) continue;
      const runs = await store.countRuns(stored.workflowId, stored.version);
      if (runs.live + runs.ended > 0) continue;
      await store.remove(stored.workflowId, stored.version);
      this.cache.delete(cacheKey(stored.workflowId, stored.version));
      this.resolved.delete(cacheKey(stored.workflowId, stored.version));
      removed.push({ workflowId: stored.workflowId, version: stored.version });
    }
    return removed;
  }

  /** Runs `retire` every RETENTION_PASS_MS (and not on a stopped host). */
  startRetention(unservedMs: number, logger: Logger): void {
    this.stopRetention();
    this.retention = setInterval(() => {
      this.retire(unservedMs).then(
        (removed) => {
          for (const r of removed)
            logger.info(
              { event: "workflow.version.removed", ...r },
              `workflow "${r.workflowId}" version "${r.version}" removed: no run uses it any more`,
            );
        },
        (err: unknown) => logger.warn({ err }, "removing unused workflow versions failed; trying again later"),
      );
    }, RETENTION_PASS_MS);
    this.retention.unref();
  }

  stopRetention(): void {
    clearInterval(this.retention);
    this.retention = undefined;
  }

  private stored(workflowId: string, version: string): Promise<PinnedDefinition> {
    const key = cacheKey(workflowId, version);
    let pinned = this.cache.get(key);
    if (!pinned) {
      pinned = this.load(workflowId, version);
      this.cache.set(key, pinned);
      // Not stored (yet) or a failed read: asked again next time, not remembered.
      pinned.then(
        (p) => (p.workflow ? undefined : this.cache.delete(key)),
        () => this.cache.delete(key),
      );
    }
    return pinned;
  }

  private async load(workflowId: string, version: string): Promise<PinnedDefinition> {
    const stored: StoredWorkflowVersion | null = await this.options.store.get(workflowId, version);
    if (!stored) {
      const reason = `version "${version}" of workflow "${workflowId}" is not in the store`;
      return { workflowId, version, deployed: false, lacking: () => reason };
    }
    const { workflow, lacks } = walkable(stored.definition, {
      ...this.options.deploy,
      kinds: this.options.catalog.kinds,
    });
    this.resolved.set(cacheKey(workflowId, version), workflow);
    return { workflowId, version, deployed: false, workflow, lacking: (nodeId) => lacks.get(nodeId) };
  }

  private now(): string {
    return (this.options.clock?.() ?? new Date()).toISOString();
  }
}

function cacheKey(workflowId: string, version: string): string {
  return JSON.stringify([workflowId, version]);
}

/** A run's definition cannot be walked at all here (its version is not stored): the reason, as a retryable error. */
export function unwalkable(pinned: PinnedDefinition, taskId: string): DomainError {
  const reason = pinned.lacking("") ?? "its definition cannot be read here";
  return new DomainError("unavailable", `Task ${taskId} cannot go on on this instance: ${reason}; try again later`, {
    taskId,
    workflowId: pinned.workflowId,
    ...(pinned.version ? { workflowVersion: pinned.version } : {}),
  });
}
