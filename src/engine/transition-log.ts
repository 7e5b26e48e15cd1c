import type { TaskStatus } from "../domain/a2a-types.js";
import type { TaskContext } from "../machine/task-context.js";
import type { TaskEvent } from "../machine/task-events.js";
import { runStatusOf, stateMetaOf, type TaskSnapshot } from "../machine/task-projection.js";
import { a2aMutationsOf, type RunEvent } from "../domain/task-record.js";

type EventDraft = Omit<RunEvent, "eventId" | "runId" | "sequence" | "timestamp">;

/** The OpenWOP events one machine transition writes to the log (interrupt.md, run-event-payloads). */
function draftsFor(event: TaskEvent, before: TaskContext, after: TaskContext): EventDraft[] {
  switch (event.type) {
    case "START":
      return [{ type: "run.started", payload: { workflowId: after.workflowId, owner: { tenant: after.tenant } } }];
    case "NODE_STARTED":
      return [
        {
          type: "node.started",
          nodeId: event.nodeId,
          // `isolated`: a suspect's execution, run alone on its instance (docs/operating.md "Poison work").
          payload: { nodeId: event.nodeId, attempt: after.attempt, ...(after.suspect ? { isolated: true } : {}) },
        },
      ];
    case "NODE_INTERRUPTED":
      // `attempt`: the execution that died; the node.started after it is the next one. `charged`: it ran alone
      // (a suspect), so the death is its own and counts in `crashes`; else it runs alone next.
      return [
        {
          type: "node.interrupted",
          nodeId: event.nodeId,
          payload: {
            nodeId: event.nodeId,
            attempt: after.attempt,
            crashes: after.crashes ?? 0,
            charged: before.suspect === true,
            cause: "instance-died",
          },
        },
      ];
    case "NODE_COMPLETED":
      return [
        {
          type: "node.completed",
          nodeId: event.nodeId,
          payload: { nodeId: event.nodeId, visit: after.visits[event.nodeId] ?? 1 },
        },
        ...event.artifacts.map((artifact) => ({
          type: "artifact.created",
          nodeId: event.nodeId,
          payload: { nodeId: event.nodeId, artifactId: artifact.artifactId, name: artifact.name },
          a2a: { artifact },
        })),
      ];
    case "NODE_PROGRESS": {
      const progress: EventDraft = {
        type: "node.progress",
        nodeId: event.nodeId,
        payload: { nodeId: event.nodeId, attempt: after.attempt, progress: event.progress },
      };
      if (!event.negotiation) return [progress];
      // interop.md's audit event: on the run's own log, content-free (domain/negotiation.ts).
      const decided: EventDraft = {
        type: "negotiation.decided",
        nodeId: event.nodeId,
        payload: { ...event.negotiation },
      };
      const unchanged = JSON.stringify(before.nodeProgress?.[event.nodeId]) === JSON.stringify(event.progress);
      return unchanged ? [decided] : [decided, progress];
    }
    case "ARTIFACT_CHUNK": {
      const { artifact, append, lastChunk } = event;
      return [
        {
          type: "output.chunk",
          nodeId: event.nodeId,
          payload: { nodeId: event.nodeId, artifactId: artifact.artifactId, append, lastChunk },
          a2a: { artifact, append, lastChunk },
        },
      ];
    }
    case "TIMER_SET":
      return [{ type: "timer.scheduled", nodeId: event.timer.nodeId, payload: { ...event.timer } }];
    case "INTERRUPT": {
      const { interrupt } = event;
      const key = `${after.taskId}:${interrupt.nodeId}:${interrupt.interruptId}`;
      const legacy: EventDraft =
        interrupt.kind === "approval"
          ? {
              type: "approval.requested",
              nodeId: interrupt.nodeId,
              payload: {
                nodeId: interrupt.nodeId,
                interruptId: interrupt.interruptId,
                artifactId: (interrupt.data["artifactIds"] as string[] | undefined)?.[0] ?? interrupt.nodeId,
                artifactType: "text",
                title: interrupt.data["title"],
                actions: (interrupt.data["actions"] as string[]).map((a) => (a === "edit-accept" ? "edit" : a)),
              },
            }
          : {
              type: "clarification.requested",
              nodeId: interrupt.nodeId,
              payload: {
                nodeId: interrupt.nodeId,
                interruptId: interrupt.interruptId,
                questions: interrupt.data["questions"],
              },
            };
      return [
        {
          type: "node.suspended",
          nodeId: interrupt.nodeId,
          payload: { nodeId: interrupt.nodeId, interruptId: interrupt.interruptId, kind: interrupt.kind, key },
        },
        {
          type: "interrupt.requested",
          nodeId: interrupt.nodeId,
          payload: {
            runId: after.taskId,
            nodeId: interrupt.nodeId,
            interruptId: interrupt.interruptId,
            kind: interrupt.kind,
            key,
            data: interrupt.data,
            requestedAt: interrupt.requestedAt,
            ...(interrupt.expiresAt
              ? { timeoutMs: Date.parse(interrupt.expiresAt) - Date.parse(interrupt.requestedAt) }
              : {}),
          },
        },
        legacy,
      ];
    }
    case "RESUME": {
      const interrupt = before.interrupt;
      const kind = interrupt?.kind ?? "approval";
      const resolved: EventDraft = {
        type: "interrupt.resolved",
        nodeId: event.nodeId,
        payload: {
          runId: after.taskId,
          nodeId: event.nodeId,
          interruptId: interrupt?.interruptId,
          kind,
          resumeValue: event.resumeValue,
          resolvedAt: event.at,
          resolvedBy: event.resolvedBy,
        },
      };
      const output = event.output as Record<string, unknown>;
      const legacy: EventDraft =
        kind === "approval"
          ? {
              type: "approval.received",
              nodeId: event.nodeId,
              payload: {
                nodeId: event.nodeId,
                action: output["reason"] === "timeout" ? "timeout" : output["action"],
                decidedBy: event.resolvedBy,
                decidedAt: event.at,
                ...(output["feedback"] ? { feedback: output["feedback"] } : {}),
                ...(output["refineFeedback"] ? { refineFeedback: output["refineFeedback"] } : {}),
              },
            }
          : {
              type: "clarification.resolved",
              nodeId: event.nodeId,
              payload: { nodeId: event.nodeId, interruptId: interrupt?.interruptId, resolvedBy: event.resolvedBy },
            };
      const edited = (event.artifacts ?? []).map((artifact) => ({
        type: "artifact.created",
        nodeId: event.nodeId,
        payload: { nodeId: event.nodeId, artifactId: artifact.artifactId, name: artifact.name, edited: true },
        a2a: { artifact },
      }));
      const ending: EventDraft[] = event.fail
        ? [
            {
              type: "run.failed",
              payload: { error: event.fail, failedNodeId: event.nodeId, durationMs: durationOf(after) },
            },
          ]
        : [{ type: "node.resumed", nodeId: event.nodeId, payload: { nodeId: event.nodeId } }];
      return [resolved, legacy, ...edited, ...ending];
    }
    case "ASK":
      return [
        {
          type: "interrupt.exchange",
          nodeId: before.interrupt?.nodeId,
          payload: {
            nodeId: before.interrupt?.nodeId,
            interruptId: before.interrupt?.interruptId,
            question: event.question,
            askedBy: event.askedBy,
          },
        },
      ];
    // Operator actions (steering): one log event each, naming who acted.
    case "PAUSE":
      return [
        {
          type: "run.paused",
          payload: {
            pausedBy: event.by,
            drainPolicy: event.drainPolicy,
            fromStatus: after.paused?.from,
            ...(event.reason !== undefined ? { reason: event.reason } : {}),
          },
        },
      ];
    case "UNPAUSE":
      return [
        {
          type: "run.resumed",
          payload: {
            resumedBy: event.by,
            toStatus: before.paused?.from,
            ...(event.reason !== undefined ? { reason: event.reason } : {}),
          },
        },
      ];
    // The host's own operations log vendor events under its org (openwop/openwop spec/v2/core/events.md 4bc4ba05).
    case "RETRY":
      return [
        {
          type: "openwop-a2a-host.run.retried",
          nodeId: event.nodeId,
          payload: { nodeId: event.nodeId, retriedBy: event.by, error: before.error },
        },
      ];
    case "RESTART":
      return [
        {
          type: "openwop-a2a-host.run.restarted",
          nodeId: event.nodeId,
          payload: {
            nodeId: event.nodeId,
            restartedBy: event.by,
            fromNodeId: before.cursor,
            toStatus: after.paused ? "paused" : "running",
            ...(event.reason !== undefined ? { reason: event.reason } : {}),
          },
        },
      ];
    case "MOVE":
      return [
        {
          type: "openwop-a2a-host.run.moved",
          nodeId: event.nodeId,
          payload: {
            nodeId: event.nodeId,
            movedBy: event.by,
            fromNodeId: before.cursor,
            ...(event.fromVersion !== undefined ? { fromVersion: event.fromVersion } : {}),
            toVersion: event.toVersion,
            toStatus: after.paused ? "paused" : "running",
            ...(event.reason !== undefined ? { reason: event.reason } : {}),
          },
        },
      ];
    case "BLOCK":
      return [
        {
          type: "openwop-a2a-host.node.blocked",
          nodeId: event.nodeId,
          payload: {
            nodeId: event.nodeId,
            reason: event.reason,
            instance: event.instance,
            ...(after.workflowVersion !== undefined ? { workflowVersion: after.workflowVersion } : {}),
          },
        },
      ];
    case "CANCEL":
      return [{ type: "run.cancelling", payload: { reason: event.reason, cancelledBy: event.cancelledBy } }];
    case "CANCELLED":
      return [{ type: "run.cancelled", payload: { reason: after.cancelReason, durationMs: durationOf(after) } }];
    case "COMPLETE":
      return [
        {
          type: "run.completed",
          payload: { artifactIds: after.artifacts.map((a) => a.artifactId), durationMs: durationOf(after) },
        },
      ];
    case "FAIL": {
      const failed: EventDraft = {
        type: "run.failed",
        payload: {
          error: event.error,
          ...(event.error.nodeId ? { failedNodeId: event.error.nodeId } : {}),
          durationMs: durationOf(after),
        },
      };
      return event.error.nodeId
        ? [
            {
              type: "node.failed",
              nodeId: event.error.nodeId,
              payload: { nodeId: event.error.nodeId, error: event.error },
            },
            failed,
          ]
        : [failed];
    }
  }
}

function durationOf(context: TaskContext): number | undefined {
  return context.startedAt && context.endedAt ? Date.parse(context.endedAt) - Date.parse(context.startedAt) : undefined;
}

/** The TaskStatus a snapshot shows on the A2A wire. */
export function a2aStatusOf(snapshot: TaskSnapshot, at: string): TaskStatus {
  const message = snapshot.context.statusMessage;
  return { state: stateMetaOf(snapshot).a2aState, ...(message ? { message } : {}), timestamp: at };
}

/** `metadata.openwop` carried by status updates: the run status, the interrupt carrier, the error. */
export function openwopStatusMetadata(snapshot: TaskSnapshot): Record<string, unknown> {
  const { interrupt, error, taskId, paused } = snapshot.context;
  return {
    openwop: {
      runId: taskId,
      status: runStatusOf(snapshot),
      ...(interrupt
        ? {
            interrupt: {
              kind: interrupt.kind,
              nodeId: interrupt.nodeId,
              interruptId: interrupt.interruptId,
              ...(interrupt.metadata ? { metadata: interrupt.metadata } : {}),
            },
          }
        : {}),
      ...(error ? { error: { code: error.code, message: error.message } } : {}),
      ...(paused
        ? {
            paused: { by: paused.by, at: paused.at, ...(paused.reason !== undefined ? { reason: paused.reason } : {}) },
          }
        : {}),
    },
  };
}

function a2aChanged(before: TaskSnapshot | undefined, after: TaskSnapshot): boolean {
  if (!before) return true;
  return (
    stateMetaOf(before).a2aState !== stateMetaOf(after).a2aState ||
    before.context.statusMessage?.messageId !== after.context.statusMessage?.messageId ||
    before.context.interrupt?.interruptId !== after.context.interrupt?.interruptId
  );
}

/**
 * Turns one transition into numbered log events. When the A2A view changed, the last event carries the new
 * status, so streams and push read their updates straight from the log. Each event with an A2A update also
 * carries the task's generation after it, counted on from `generation` (the task's before the transition;
 * undefined for a task written before generations were kept, whose events then carry none).
 */
export function logEventsFor(args: {
  event: TaskEvent | { type: "CREATED"; at: string };
  before?: TaskSnapshot;
  after: TaskSnapshot;
  firstSequence: number;
  generation: number | undefined;
}): RunEvent[] {
  const { event, before, after, firstSequence } = args;
  const drafts: EventDraft[] =
    event.type === "CREATED"
      ? [
          {
            type: "run.created",
            payload: {
              workflowId: after.context.workflowId,
              ...(after.context.workflowVersion !== undefined
                ? { workflowVersion: after.context.workflowVersion }
                : {}),
              owner: { tenant: after.context.tenant },
            },
          },
        ]
      : draftsFor(event, before?.context ?? after.context, after.context);
  const last = drafts[drafts.length - 1]!;
  if (a2aChanged(before, after))
    last.a2a = { ...last.a2a, status: a2aStatusOf(after, event.at), metadata: openwopStatusMetadata(after) };
  // The messages the transition appended (never more than the context's window holds) go to the log.
  const added = after.context.historyCount - (before?.context.historyCount ?? 0);
  if (added > 0) {
    last.history = after.context.history.slice(after.context.history.length - added);
    last.historyEnd = after.context.historyCount;
  }
  let generation = args.generation;
  for (const draft of drafts) {
    if (generation === undefined || !draft.a2a) continue;
    generation += a2aMutationsOf(draft);
    draft.a2a = { ...draft.a2a, generation };
  }
  const runId = after.context.taskId;
  return drafts.map((draft, i) => {
    const sequence = firstSequence + i;
    return { eventId: `${runId}:${sequence}`, runId, ...draft, timestamp: event.at, sequence };
  });
}
