import type { Logger } from "../observability/logger.js";
import type { TaskStore } from "../store/task-store.js";
import type { LeaseSettings } from "./lease-settings.js";
import type { NodeServicesByKind } from "./nodes/node-registry.js";
import type { RecoverySettings } from "./recovery-settings.js";
import type { CreationGate } from "./task-admission.js";
import type { TransitionHook } from "./transition-hook.js";
import type { WorkSettings } from "./work-settings.js";
import type { WorkflowCatalog } from "./workflow-catalog.js";
import type { WorkflowVersions } from "./workflow-versions.js";

/** What the task supervisor (task-supervisor.ts) is built from. */
export interface SupervisorOptions {
  store: TaskStore;
  /** The workflows, and the node kinds they were checked against (their executors run the nodes). */
  catalog: WorkflowCatalog;
  /** The definition version each task walks (stored before serving), and what of it this instance lacks. */
  versions: WorkflowVersions;
  /** What the kinds' executors use: each kind's own services, by kind (NodeKindRegistry.createServices). */
  services: NodeServicesByKind;
  hook: TransitionHook;
  logger: Logger;
  /** How long a terminal task stays readable. */
  retentionMs: number;
  timerPollMs: number;
  /** Task execution leases (several instances on one database); defaults: a random id, 10 s TTL, 3 s heartbeat. */
  leases?: LeaseSettings;
  /** Poison work: how many times a node may die with its instance (RECOVERY_MAX_ATTEMPTS; default 5). */
  recovery?: RecoverySettings;
  /** Fair work: node effects at once and tenant weights (WORK_CONCURRENCY, WORK_TENANT_WEIGHTS; defaults 128, all 1). */
  work?: WorkSettings;
  /** Told of each node effect's admission: its tenant and how long it waited for its turn (metrics). */
  workAdmitted?: (tenant: string, waitedMs: number) => void;
  /** Tenant limits and overload shedding on task creation (src/limits/); absent: every creation is admitted. */
  admission?: CreationGate;
  clock?: () => Date;
}
