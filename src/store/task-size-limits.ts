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
export const DEFAULT_TASK_SIZE_LIMITS: TaskSizeLimits = {
  maxMessageBytes: MIB,
  maxArtifactBytes: 4 * MIB,
  maxTaskBytes: 12 * MIB,
};

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
}

/**
 * An upper bound of `jsonBytes(value)` from a walk that allocates nothing (every store write checks the head:
 * serializing it each time cost ~3 % of a task's CPU). Each UTF-16 unit of a string is at most 6 bytes of
 * JSON (`\uXXXX`), a number at most 25 characters. Infinity where the bound cannot be told without
 * serializing (custom `toJSON`, boxed primitives, a cycle or very deep nesting): the exact size decides.
 */
function jsonBytesBound(value: unknown, depth: number): number {
  switch (typeof value) {
    case "string":
      return 6 * value.length + 2;
    case "number":
      return 25;
    case "boolean":
      return 5;
    case "object":
      break;
    case "bigint":
      return Infinity;
    default:
      // undefined, functions, symbols: left out of objects, `null` in arrays.
      return 4;
  }
  if (value === null) return 4;
  if (depth > 256) return Infinity;
  if (Array.isArray(value)) {
    let bytes = value.length + 1;
    for (let i = 0; i < value.length; i++) bytes += jsonBytesBound(value[i], depth + 1);
    return bytes;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return value instanceof Date ? 32 : Infinity;
  if (value instanceof String || value instanceof Number || value instanceof Boolean) return Infinity;
  let bytes = 2;
  for (const key in value) {
    if (Object.hasOwn(value, key))
      bytes += 6 * key.length + 4 + jsonBytesBound((value as Record<string, unknown>)[key], depth + 1);
  }
  return bytes;
}

/** The exact JSON size of `values` together when it may be over `limit`; undefined when it surely is not. */
function bytesIfOver(limit: number, ...values: unknown[]): number | undefined {
  let bound = 0;
  for (const value of values) bound += jsonBytesBound(value, 0);
  if (bound <= limit) return undefined;
  let bytes = 0;
  for (const value of values) bytes += jsonBytes(value);
  return bytes > limit ? bytes : undefined;
}

function tooLarge(what: string, bytes: number, limit: number, details: Record<string, unknown> = {}): DomainError {
  return new DomainError("content-too-large", `${what} is ${bytes} bytes, over the limit of ${limit} bytes`, {
    ...details,
    sizeBytes: bytes,
    limitBytes: limit,
  });
}

/** A caller's message over the cap is refused before anything is looked up or stored. */
export function assertMessageSize(message: { messageId: string }, limits: TaskSizeLimits): void {
  const bytes = bytesIfOver(limits.maxMessageBytes, message);
  if (bytes !== undefined)
    throw tooLarge(`message ${message.messageId}`, bytes, limits.maxMessageBytes, { messageId: message.messageId });
}

/**
 * Checked by every adapter before a create or commit writes anything: each new artifact under its cap, and the
 * task head (what one document holds) under the total. A refused write leaves the task exactly as it was.
 */
export function assertWriteSize(
  head: { taskId: string; snapshot: unknown; a2a: unknown },
  events: ReadonlyArray<{ a2a?: { artifact?: Artifact } }>,
  limits: TaskSizeLimits,
): void {
  for (const event of events) {
    const artifact = event.a2a?.artifact;
    if (!artifact) continue;
    const bytes = bytesIfOver(limits.maxArtifactBytes, artifact);
    if (bytes !== undefined)
      throw tooLarge(`artifact ${artifact.artifactId}`, bytes, limits.maxArtifactBytes, {
        taskId: head.taskId,
        artifactId: artifact.artifactId,
      });
  }
  const bytes = bytesIfOver(limits.maxTaskBytes, head.snapshot, head.a2a);
  if (bytes !== undefined) {
    throw tooLarge(`task ${head.taskId} would be`, bytes, limits.maxTaskBytes, { taskId: head.taskId });
  }
}
