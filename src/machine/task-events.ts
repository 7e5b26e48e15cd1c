import type { Artifact, Message } from "../domain/a2a-types.js";
import type { PendingInterrupt, DurableTimer, RunError } from "./task-context.js";
import type { DrainPolicy } from "../domain/run-status.js";
import type { NegotiationDecided } from "../domain/negotiation.js";

export type { DrainPolicy };

/** Events the task machine accepts. `at` is the commit time, supplied by the caller so transitions stay pure. */
export type TaskEvent =
  | { type: "START"; at: string }
  | { type: "NODE_STARTED"; at: string; nodeId: string }
  | { type: "NODE_COMPLETED"; at: string; nodeId: string; output: unknown; artifacts: Artifact[]; next: string | null }
  /**
   * The running node's last execution died with its instance: charged (`crashes`) when it ran alone as a suspect,
   * else it becomes a suspect; logged as node.interrupted.
   */
  | { type: "NODE_INTERRUPTED"; at: string; nodeId: string }
  /**
   * A running node recorded progress (replaces its whole `nodeProgress` entry); logged as node.progress. With
   * `negotiation` (an a2a.invoke's version negotiation with its peer), also logged as negotiation.decided, the
   * node.progress then left out when the entry did not change (a refusal records no progress).
   */
  | {
      type: "NODE_PROGRESS";
      at: string;
      nodeId: string;
      progress: Record<string, unknown>;
      negotiation?: NegotiationDecided;
    }
  /** A running node streamed a piece of an artifact (`append`: add its parts to the artifact with that id). */
  | { type: "ARTIFACT_CHUNK"; at: string; nodeId: string; artifact: Artifact; append: boolean; lastChunk: boolean }
  | { type: "TIMER_SET"; at: string; timer: DurableTimer }
  | { type: "INTERRUPT"; at: string; interrupt: PendingInterrupt; statusMessage: Message; timer?: DurableTimer }
  | {
      type: "RESUME";
      at: string;
      nodeId: string;
      resumeValue: Record<string, unknown>;
      resolvedBy: string;
      message?: Message;
      next: string | null;
      output: unknown;
      artifacts?: Artifact[];
      /** A decision that ends the run (reject without a goto, timeout): resolved and failed in one commit. */
      fail?: RunError;
      statusMessage?: Message;
      /** The node's new `nodeProgress` entry (an a2a.invoke records the reply it still has to forward). */
      progress?: Record<string, unknown>;
    }
  | { type: "ASK"; at: string; question: string; askedBy: string; message?: Message; statusMessage: Message }
  /** Operator actions (steering): each carries the acting principal's id in `by`. */
  | { type: "PAUSE"; at: string; by: string; reason?: string; drainPolicy: DrainPolicy; statusMessage: Message }
  | { type: "UNPAUSE"; at: string; by: string; reason?: string }
  /** A failed task runs its failed node again; a paused, waiting or failed one starts over at `nodeId` (a new visit). */
  | { type: "RETRY"; at: string; by: string; nodeId: string }
  | { type: "RESTART"; at: string; by: string; nodeId: string; reason?: string }
  /**
   * A waiting or paused task goes on in another version of its workflow from `nodeId`, the node an operator mapped
   * its current node to (of the same kind): a new visit there, as a restart.
   */
  | { type: "MOVE"; at: string; by: string; fromVersion?: string; toVersion: string; nodeId: string; reason?: string }
  /** The current node needs what this instance lacks: the task waits for an instance that has it. */
  | { type: "BLOCK"; at: string; nodeId: string; reason: string; instance: string }
  | { type: "CANCEL"; at: string; reason: string; cancelledBy: string }
  | { type: "CANCELLED"; at: string }
  | { type: "COMPLETE"; at: string; statusMessage?: Message }
  | { type: "FAIL"; at: string; error: RunError; statusMessage?: Message };

export type TaskEventType = TaskEvent["type"];

export const TASK_EVENT_TYPES: readonly TaskEventType[] = [
  "START",
  "NODE_STARTED",
  "NODE_COMPLETED",
  "NODE_INTERRUPTED",
  "NODE_PROGRESS",
  "ARTIFACT_CHUNK",
  "TIMER_SET",
  "INTERRUPT",
  "RESUME",
  "ASK",
  "PAUSE",
  "UNPAUSE",
  "RETRY",
  "RESTART",
  "MOVE",
  "BLOCK",
  "CANCEL",
  "CANCELLED",
  "COMPLETE",
  "FAIL",
];
