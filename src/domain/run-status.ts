/** OpenWOP run statuses (run-snapshot.schema.json). They are the states of the task machine. */
export const RUN_STATUSES = [
  "pending",
  "running",
  "paused",
  "waiting-approval",
  "waiting-input",
  "waiting-external",
  "cancelling",
  "completed",
  "failed",
  "cancelled",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** runs.md pauseRun: `drain-current-node` (default) lets the running node finish; `immediate` drops its result (it runs again on resume). */
export type DrainPolicy = "drain-current-node" | "immediate";

export const TERMINAL_RUN_STATUSES: ReadonlySet<RunStatus> = new Set(["completed", "failed", "cancelled"]);
/** Statuses in which a task has work to do without anyone's input: what a restart resumes. */
export const RUNNABLE_RUN_STATUSES: ReadonlySet<RunStatus> = new Set(["pending", "running", "cancelling"]);

export function isTerminalRunStatus(status: RunStatus): boolean {
  return TERMINAL_RUN_STATUSES.has(status);
}

/** The log events that enter a terminal status (`run.completed`...): a run's log never grows after one. */
export const TERMINAL_RUN_EVENT_TYPES: ReadonlySet<string> = new Set(
  [...TERMINAL_RUN_STATUSES].map((status) => `run.${status}`),
);

/** A2A TaskState in its v0.3 wire spelling, which is also the canonical stored form (A2ATaskState.state). */
export const A2A_TASK_STATES = [
  "submitted",
  "working",
  "input-required",
  "auth-required",
  "completed",
  "failed",
  "canceled",
  "rejected",
] as const;
export type A2ATaskStateValue = (typeof A2A_TASK_STATES)[number];

const TERMINAL_A2A: ReadonlySet<A2ATaskStateValue> = new Set(["completed", "failed", "canceled", "rejected"]);
const INTERRUPTED_A2A: ReadonlySet<A2ATaskStateValue> = new Set(["input-required", "auth-required"]);

export function isTerminalA2AState(state: A2ATaskStateValue): boolean {
  return TERMINAL_A2A.has(state);
}

export function isInterruptedA2AState(state: A2ATaskStateValue): boolean {
  return INTERRUPTED_A2A.has(state);
}

/** A state name read off the wire (a peer's task): one of ours, or not. */
export function isA2ATaskState(state: string): state is A2ATaskStateValue {
  return (A2A_TASK_STATES as readonly string[]).includes(state);
}

/** Terminal or interrupted: a blocking send returns and a stream closes (final: true). */
export function isFinalA2AState(state: A2ATaskStateValue): boolean {
  return TERMINAL_A2A.has(state) || INTERRUPTED_A2A.has(state);
}

export const INTERRUPT_KINDS = ["approval", "clarification", "external-event"] as const;
export type InterruptKind = (typeof INTERRUPT_KINDS)[number];

/** The 5-action approval vocabulary (interrupt.md). `ask` does not end the wait. */
export const APPROVAL_ACTIONS = ["accept", "reject", "refine", "edit-accept", "ask"] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];
