import type { Artifact, Message } from "../domain/a2a-types.js";
import type { InterruptKind } from "../domain/run-status.js";

/** A pending human-in-the-loop interrupt (interrupt.md: interrupt.requested). */
export interface PendingInterrupt {
  interruptId: string;
  nodeId: string;
  kind: InterruptKind;
  /** What the caller is asked: ApprovalData / clarification questions. Shown to callers; holds no secrets. */
  data: Record<string, unknown>;
  requestedAt: string;
  /** Absolute deadline; an approval gate auto-rejects when it passes. */
  expiresAt?: string;
  /** `ask` exchanges accumulated while the interrupt stays pending. */
  exchanges: Array<{ question: string; askedBy: string; askedAt: string }>;
  /**
   * What kind of wait this is beyond `kind`, e.g. `{subkind: "auth", source: "a2a.invoke"}` when a remote
   * agent asks for authentication. Shown to callers in `metadata.openwop.interrupt.metadata`.
   */
  metadata?: Record<string, unknown>;
}

export interface DurableTimer {
  nodeId: string;
  purpose: "delay" | "interrupt-timeout";
  dueAt: string;
}

/** The statuses an operator can pause, and so the statuses a resume returns to. */
export type PausableStatus = "pending" | "running" | "waiting-approval" | "waiting-input" | "waiting-external";

/** Set while an operator has the task paused (runs.md "Pause and resume"). */
export interface PauseRecord {
  /** The status the task had when paused, and returns to on resume. */
  from: PausableStatus;
  at: string;
  by: string;
  reason?: string;
  /** drain-current-node: the node running at the pause may still finish, and its outcome is recorded. */
  drain: boolean;
  /** The A2A status message the pause replaced; put back on resume. */
  statusMessage?: Message;
}

/**
 * The running task's current node needs something this instance lacks (a handler, a peer, a variable or a node
 * kind its pinned definition version names): it waits here, runnable, for an instance that has it.
 */
export interface BlockedRecord {
  nodeId: string;
  /** What is missing, in words a person reads (the console shows it). */
  reason: string;
  at: string;
  /** The instance that left the task. */
  instance: string;
}

export interface RunError {
  code: string;
  message: string;
  nodeId?: string;
}

/**
 * Everything the run needs to continue after a restart lives here and is persisted with every
 * transition. The machine never performs side effects; the engine computes the payload of each event.
 */
export interface TaskContext {
  taskId: string;
  contextId: string;
  workflowId: string;
  /**
   * The version of the definition the run walks (docs/workflows.md "Changing a workflow"): its `version` field, or
   * a digest of its canonical form. Set at creation, changed only by a move. Absent on runs created before versions
   * were recorded: they walk whatever definition is deployed.
   */
  workflowVersion?: string;
  tenant: string;
  /** The node that runs next (or is running); null once the workflow has no more nodes. */
  cursor: string | null;
  /** True between node.started and node.completed of `cursor`. */
  nodeStarted: boolean;
  /** Executions of the current node, for idempotency keys (at-least-once across crashes). */
  attempt: number;
  /**
   * Executions of the current node cut short by the death of the instance running them (found started, never
   * finished, under a lease its holder never gave back): poison work, bounded by RECOVERY_MAX_ATTEMPTS. Not
   * handler retries (`retry.maxAttempts`) nor SIGTERM restarts. Absent means 0 (also on snapshots from before it).
   * Only deaths while the node ran alone on its instance (`suspect`) are counted: another node may have killed it.
   */
  crashes?: number;
  /**
   * The current node was running when its instance died unexplained, with other work beside it: it is not charged
   * for that death, but its next executions run alone on their instance (docs/operating.md "Poison work"), so a
   * death during one of them is its own. Cleared when the node ends, as `crashes` is.
   */
  suspect?: boolean;
  /** Completed executions per node: refine loops visit a node again, and each visit has its own idempotency key. */
  visits: Record<string, number>;
  outputs: Record<string, unknown>;
  artifacts: Artifact[];
  /** Which node produced which artifacts (approval gates put a node's artifacts up for review). */
  artifactsByNode: Record<string, string[]>;
  /** The creating message: what the caller asked for (the first message of the history). */
  request: Message;
  /** The newest message from the caller after the first (a `switch` routes on it), also once it left `history`. */
  lastUserMessage?: Message;
  /** How many messages the task's A2A history holds (`history` is only its newest part). */
  historyCount: number;
  /**
   * The newest messages of the A2A history, at most RECENT_HISTORY of them (all of it while it is that
   * short). The whole history lives in the event log: each transition's log events carry the messages it
   * appended (`RunEvent.history`), so the task head does not grow with the conversation.
   */
  history: Message[];
  /**
   * Only on tasks stored by machine version 1, whose log does not carry messages: the history they had then
   * (indexes 0 to length - 1), kept in the head. Messages appended since are in the log as for any task.
   */
  unloggedHistory?: Message[];
  /**
   * Per-node progress of a node that works in several steps (an `a2a.invoke` records the peer's task id and
   * last state here as soon as the peer answers), so a restart resumes the step instead of repeating it.
   * Cleared when the node completes. Absent on tasks that never needed it.
   */
  nodeProgress?: Record<string, Record<string, unknown>>;
  statusMessage?: Message;
  interrupt?: PendingInterrupt;
  timer?: DurableTimer;
  error?: RunError;
  cancelReason?: string;
  paused?: PauseRecord;
  /** Set while no instance that has what the current node needs has taken the task (cleared when the node starts). */
  blocked?: BlockedRecord;
  startedAt?: string;
  endedAt?: string;
}
