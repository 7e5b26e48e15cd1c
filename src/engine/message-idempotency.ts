import { hash } from "node:crypto";
import type { Principal } from "../auth/principal.js";
import type { Message } from "../domain/a2a-types.js";
import { canonicalJson } from "../domain/canonical-json.js";
import { DomainError } from "../domain/errors.js";
import type { TaskRecord } from "../domain/task-record.js";

/**
 * A2A `message.messageId` as an idempotency key (OpenWOP RFC 0152, for A2A 0.3 and 1.0 alike): per
 * (caller principal, messageId), a repeated message never starts a second run and answers the task the
 * first one created; the same messageId with different content is refused (idempotency-conflict). The
 * decoded domain message is compared, so a retry over another binding or protocol version still matches.
 */
export interface IdempotencySeed {
  /** Digest of (tenant, principal id, messageId): what the store's unique index holds. */
  key: string;
  /** Digest of what the message asks for. */
  fingerprint: string;
}

export function creationSeed(principal: Principal, message: Message, workflowId: string): IdempotencySeed {
  return {
    key: digest(["a2a-message", principal.tenant, principal.id, message.messageId]),
    fingerprint: digest({ workflowId, contextId: message.contextId ?? null, ...content(message) }),
  };
}

/** A repeat of the message that created `existing`: fine when the content matches, refused otherwise. */
export function assertSameRequest(
  existing: Pick<TaskRecord, "taskId" | "requestFingerprint">,
  seed: IdempotencySeed,
  messageId: string,
): void {
  if (existing.requestFingerprint && existing.requestFingerprint !== seed.fingerprint)
    throw reused(messageId, existing.taskId);
}

/**
 * For a message to an existing task: was it already received (same messageId in the task's history)?
 * "repeat" when the content matches (the caller retried: nothing must happen twice), "new" when the id is
 * unused; a known id with different content is refused.
 */
export function classifyReply(history: readonly Message[], taskId: string, message: Message): "new" | "repeat" {
  const earlier = history.find((m) => m.role === "user" && m.messageId === message.messageId);
  if (!earlier) return "new";
  if (digest(content(earlier)) !== digest(content(message))) throw reused(message.messageId, taskId);
  return "repeat";
}

function content(message: Message) {
  return {
    role: message.role,
    parts: message.parts,
    metadata: message.metadata ?? null,
    extensions: message.extensions ?? [],
    referenceTaskIds: message.referenceTaskIds ?? [],
  };
}

function reused(messageId: string, taskId: string): DomainError {
  return new DomainError(
    "idempotency-conflict",
    `message.messageId "${messageId}" was already used for a different message (task ${taskId}); a retry must repeat the message unchanged, a new message needs a new messageId`,
    { messageId, taskId },
  );
}

function digest(value: unknown): string {
  return hash("sha256", canonicalJson(value), "hex");
}
