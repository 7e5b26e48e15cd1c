import { isTerminalA2AState } from "../domain/run-status.js";
import type { TaskStatus } from "../domain/a2a-types.js";
import type { RunEvent, TaskRecord } from "../store/task-store.js";

export interface ArtifactRef {
  artifactId: string;
  name?: string;
}

/**
 * The push body: an A2A v0.3 TaskStatusUpdateEvent, content-free. It carries the state, when it changed,
 * `final`, and `metadata.openwop` with the run id and status, the interrupt carrier (kind and ids, never
 * its data), the error code, the ids and names of the task's artifacts so far, and the event id and
 * sequence. It never carries the status message, history, run inputs, artifact parts or error text.
 */
export function pushBody(task: Pick<TaskRecord, "taskId" | "contextId">, event: RunEvent, artifacts: ArtifactRef[]): string {
  const status = event.a2a?.status as TaskStatus;
  const carried = (event.a2a?.metadata?.["openwop"] ?? {}) as {
    status?: unknown;
    interrupt?: { kind?: unknown; nodeId?: unknown; interruptId?: unknown };
    error?: { code?: unknown };
  };
  const interrupt = carried.interrupt
    ? { kind: carried.interrupt.kind, nodeId: carried.interrupt.nodeId, interruptId: carried.interrupt.interruptId }
    : undefined;
  const body = {
    kind: "status-update",
    taskId: task.taskId,
    contextId: task.contextId,
    status: { state: status.state, timestamp: status.timestamp },
    // Terminal only: a webhook is not a stream, and input-required is a pause the task comes back from.
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
  return JSON.stringify(body);
}

/** Artifact references (id, name) created up to and including `sequence`, the latest name winning. */
export function artifactRefsUpTo(events: RunEvent[], sequence: number): ArtifactRef[] {
  const refs = new Map<string, ArtifactRef>();
  for (const event of events) {
    if (event.sequence > sequence) break;
    const artifact = event.a2a?.artifact;
    if (artifact) refs.set(artifact.artifactId, { artifactId: artifact.artifactId, ...(artifact.name ? { name: artifact.name } : {}) });
  }
  return [...refs.values()];
}
