import { DomainError } from "../domain/errors.js";
import type { Artifact } from "../domain/a2a-types.js";

/**
 * Size caps that keep a task inside what the store can hold (MongoDB refuses documents over 16 MiB with an
 * internal-looking error). Sizes are UTF-8 bytes of the JSON form: close to the BSON size and the same for
 * every adapter, so the memory and MongoDB stores refuse exactly the same writes.
 */
export interface TaskSizeLimits {
  /** `MAX_MESSAGE_BYTES`: one message a caller sends. */
  maxMessageBytes: number;
  /** `MAX_ARTIFACT_BYTES`: one artifact a node produces. */
  maxArtifactBytes: number;
  /**
   * `MAX_TASK_BYTES`: the stored task head: the snapshot (its bounded context: cursor, interrupt, outputs, the
   * current artifacts, the newest history messages) and projections. The whole history is in the event log,
   * one message at most `maxMessageBytes`, so it does not count here: a task's total size is its head plus
   * its log, and only the head has to fit in one MongoDB document.
   */
  maxTaskBytes: number;
}

const MIB = 1024 * 1024;

/** Below MongoDB's 16 MiB document limit with room for BSON overhead and the head's own fields. */
export const DEFAULT_TASK_SIZE_LIMITS: TaskSizeLimits = { maxMessageBytes: MIB, maxArtifactBytes: 4 * MIB, maxTaskBytes: 12 * MIB };

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
}

function tooLarge(what: string, bytes: number, limit: number, details: Record<string, unknown> = {}): DomainError {
  return new DomainError("content-too-large", `${what} is ${bytes} bytes, over the limit of ${limit} bytes`, { ...details, sizeBytes: bytes, limitBytes: limit });
}

/** A caller's message over the cap is refused before anything is looked up or stored. */
export function assertMessageSize(message: { messageId: string }, limits: TaskSizeLimits): void {
  const bytes = jsonBytes(message);
  if (bytes > limits.maxMessageBytes) throw tooLarge(`message ${message.messageId}`, bytes, limits.maxMessageBytes, { messageId: message.messageId });
}

/**
 * Checked by every adapter before a create or commit writes anything: each new artifact under its cap, and the
 * task head (what one document holds) under the total. A refused write leaves the task exactly as it was.
 */
export function assertWriteSize(head: { taskId: string; snapshot: unknown; a2a: unknown }, events: ReadonlyArray<{ a2a?: { artifact?: Artifact } }>, limits: TaskSizeLimits): void {
  for (const event of events) {
    const artifact = event.a2a?.artifact;
    if (!artifact) continue;
    const bytes = jsonBytes(artifact);
    if (bytes > limits.maxArtifactBytes) throw tooLarge(`artifact ${artifact.artifactId}`, bytes, limits.maxArtifactBytes, { taskId: head.taskId, artifactId: artifact.artifactId });
  }
  const bytes = jsonBytes(head.snapshot) + jsonBytes(head.a2a);
  if (bytes > limits.maxTaskBytes) {
    throw tooLarge(`task ${head.taskId} would be`, bytes, limits.maxTaskBytes, { taskId: head.taskId });
  }
}
