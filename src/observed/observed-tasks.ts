import { isTerminalA2AState, type A2ATaskStateValue } from "../domain/run-status.js";
import type { TaskSupervisor } from "../engine/task-supervisor.js";
import { POISON_EXHAUSTED } from "../engine/recovery-settings.js";
import { TransitionHook, type CommittedTransition, type TransitionListener } from "../engine/transition-hook.js";
import type { Logger } from "../observability/logger.js";
import { labelSets, startAtZero } from "../observability/metrics.js";
import type { Telemetry } from "../observability/telemetry.js";
import type { CommitBus } from "../store/commit-bus.js";

/** The transition hook that also counts its open per-task subscriptions (streams, blocking sends). */
export class CountingTransitionHook extends TransitionHook {
  private open = 0;

  override onTask(taskId: string, listener: TransitionListener): () => void {
    const off = super.onTask(taskId, listener);
    this.open++;
    let closed = false;
    return () => {
      if (!closed) {
        closed = true;
        this.open--;
      }
      off();
    };
  }

  openSubscriptions(): number {
    return this.open;
  }
}

const INTERRUPTED: ReadonlySet<A2ATaskStateValue> = new Set(["input-required", "auth-required"]);

/**
 * Task lifecycle as logs and metrics, from committed transitions: one info line when a task is created,
 * interrupted, resumed, finished, canceled or failed (with the reason); the transition counter by from/to
 * state; gauges for tasks by tenant and state, live actors and open subscriber streams.
 */
export function observeTasks(options: {
  commits: CommitBus;
  hook: CountingTransitionHook;
  supervisor: TaskSupervisor;
  telemetry: Telemetry;
  logger: Logger;
}): () => void {
  const { commits, hook, supervisor, telemetry, logger } = options;
  const { metrics } = telemetry;
  /** Last state of each unfinished task seen here; terminal tasks leave, their count stays in `byState`. */
  const last = new Map<string, A2ATaskStateValue>();
  /** Counts by tenant, then state (tenants are the configured keys' or tokens' own: a bounded set). */
  const byState = new Map<string, Map<A2ATaskStateValue, number>>();
  const move = (tenant: string, from: A2ATaskStateValue | undefined, to: A2ATaskStateValue): void => {
    let counts = byState.get(tenant);
    if (!counts) byState.set(tenant, (counts = new Map()));
    if (from) counts.set(from, (counts.get(from) ?? 1) - 1);
    counts.set(to, (counts.get(to) ?? 0) + 1);
  };
  const taskLabels = labelSets(["tenant", "state"]);
  metrics.observe("tasks", (report) => {
    for (const [tenant, counts] of byState)
      for (const [state, count] of counts) report(count, taskLabels(tenant, state));
  });
  startAtZero(metrics.nodeInterruptions);
  startAtZero(metrics.poisonExhausted);
  startAtZero(metrics.blockedNodes);
  startAtZero(metrics.isolatedRuns);
  startAtZero(metrics.chargedCrashes);
  metrics.observe("actors", (report) => report(supervisor.liveTaskCount()));
  metrics.observe("streams", (report) => report(hook.openSubscriptions()));

  const transitionLabels = labelSets(["from", "to"]);
  const listener = (transition: CommittedTransition): void => {
    const { record, context, events } = transition;
    const taskId = record.taskId;
    const to = record.a2a.state;
    const created = events[0]?.sequence === 0;
    const from = created ? undefined : last.get(taskId);
    const logging = logger.isLevelEnabled("info");
    const task = logging
      ? { taskId, tenant: record.tenant, workflowId: record.workflowId, contextId: record.contextId }
      : undefined;
    if (created && logging) logger.info({ ...task, event: "task.created", state: to }, "task created");
    for (const event of events) {
      if (event.type === "node.interrupted") {
        metrics.nodeInterruptions.add(1);
        if (event.payload["charged"] === true) metrics.chargedCrashes.add(1);
      } else if (event.type === "node.started" && event.payload["isolated"] === true) metrics.isolatedRuns.add(1);
      else if (event.type === "run.failed" && context.error?.code === POISON_EXHAUSTED) metrics.poisonExhausted.add(1);
      else if (event.type === "openwop-a2a-host.node.blocked") metrics.blockedNodes.add(1);
    }
    if (from === to && !created) return;
    metrics.transitions.add(1, transitionLabels(from ?? (created ? "none" : "unknown"), to));
    move(record.tenant, from, to);
    if (isTerminalA2AState(to)) last.delete(taskId);
    else last.set(taskId, to);
    if (!logging) return;

    if (INTERRUPTED.has(to))
      logger.info(
        {
          ...task,
          event: "task.interrupted",
          state: to,
          ...(context.interrupt
            ? { interruptKind: context.interrupt.kind, interruptId: context.interrupt.interruptId }
            : {}),
        },
        "task interrupted",
      );
    else if (to === "working" && from && INTERRUPTED.has(from))
      logger.info({ ...task, event: "task.resumed", from }, "task resumed");
    else if (to === "completed") logger.info({ ...task, event: "task.finished", state: to }, "task finished");
    else if (to === "failed" || to === "rejected")
      logger.info(
        {
          ...task,
          event: "task.failed",
          state: to,
          reason: context.error ? `${context.error.code}: ${context.error.message}` : "unknown",
          ...(context.error?.nodeId ? { nodeId: context.error.nodeId } : {}),
        },
        "task failed",
      );
    else if (to === "canceled")
      logger.info(
        { ...task, event: "task.canceled", ...(context.cancelReason ? { reason: context.cancelReason } : {}) },
        "task canceled",
      );
  };
  // This instance's commits, from the one bus every consumer of commits reads (the hook only counts the streams).
  return commits.onAny(listener);
}
