import type { TaskStatus } from "../domain/a2a-types.js";
import { isTerminalA2AState, type A2ATaskStateValue } from "../domain/run-status.js";
import type { ArtifactRef } from "../push/push-artifact-refs.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";

/** A version's push body: how one committed event is spelled for a webhook registered over that version. */
export interface PushBody {
  contentType: string;
  encode(task: Pick<TaskRecord, "taskId" | "contextId">, event: RunEvent, artifacts: ArtifactRef[]): string;
}

export interface PushStatusFacts {
  taskId: string;
  contextId: string;
  state: A2ATaskStateValue;
  timestamp?: string;
  /** Terminal only: a webhook is not a stream, and input-required is a pause the task comes back from. */
  final: boolean;
  metadata: { openwop: Record<string, unknown> };
}

/**
 * What every push carries, content-free: the state, when it changed, and `metadata.openwop` with the run id
 * and status, the interrupt carrier (kind and ids, never its data), the error code, the ids and names of
 * the task's artifacts so far, and the event id and sequence. Never the status message, history, run
 * inputs, artifact parts or error text. Each version spells these facts in its own shape.
 */
export function pushStatusFacts(
  task: Pick<TaskRecord, "taskId" | "contextId">,
  event: RunEvent,
  artifacts: ArtifactRef[],
): PushStatusFacts {
  const status = event.a2a?.status as TaskStatus;
  const carried = (event.a2a?.metadata?.["openwop"] ?? {}) as {
    status?: unknown;
    interrupt?: { kind?: unknown; nodeId?: unknown; interruptId?: unknown };
    error?: { code?: unknown };
  };
  const interrupt = carried.interrupt
    ? { kind: carried.interrupt.kind, nodeId: carried.interrupt.nodeId, interruptId: carried.interrupt.interruptId }
    : undefined;
  return {
    taskId: task.taskId,
    contextId: task.contextId,
    state: status.state,
    ...(status.timestamp !== undefined ? { timestamp: status.timestamp } : {}),
    final: isTerminalA2AState(status.state),
    metadata: {
      openwop: {
        runId: task.taskId,
        eventId: event.eventId,
        sequence: event.sequence,
        ...(carried.status !== undefined ? { status: carried.status } : {}),
        ...(interrupt ? { interrupt } : {}),
        ...(carried.error?.code !== undefined ? { error: { code: carried.error.code } } : {}),
        artifacts,
      },
    },
  };
}
