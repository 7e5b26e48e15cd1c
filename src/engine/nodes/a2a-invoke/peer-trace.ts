import { createHash, randomBytes } from "node:crypto";
import type { Message } from "../../../domain/a2a-types.js";
import { messageTraceContext, parseTraceparent, withTraceContext } from "../../../domain/trace-context.js";
import type { TaskContext } from "../../../machine/task-context.js";

/**
 * A message to a peer with the run's trace context in `metadata.openwop` (interop.md "Trace context"), always,
 * tracing on or off: the trace the run's creating message named (its `metadata.openwop.traceparent`, kept with
 * the run), else one trace per run (its id a digest of the run id, so every call of the run, before and after a
 * restart, names the same trace); a new parent id per message, the caller's flags (else not sampled). With tracing
 * on, the peer client puts the active span's context in its place (peer/a2a-peer-client.ts).
 */
export function tracedPeerMessage(message: Message, context: Pick<TaskContext, "taskId" | "request">): Message {
  const inbound = messageTraceContext(context.request);
  const parsed = inbound ? parseTraceparent(inbound.traceparent) : undefined;
  const traceId = parsed?.traceId ?? createHash("sha256").update(context.taskId).digest("hex").slice(0, 32);
  const traceparent = `00-${traceId}-${randomBytes(8).toString("hex")}-${parsed?.flags ?? "00"}`;
  return withTraceContext(message, { traceparent, ...(inbound?.tracestate ? { tracestate: inbound.tracestate } : {}) });
}
