import type { Message } from "./a2a-types.js";

/**
 * W3C Trace Context in an A2A message (OpenWOP v2 interop.md "Trace context", RFC 0207, openwop/openwop 2549b715):
 * `Message.metadata.openwop.traceparent` and `.tracestate`. A sender carries it there (as well as, with tracing on,
 * the HTTP header); a receiver prefers the in-message value to the header, ignores a malformed one, and never
 * derives a tenant, principal or scope from either: it only names a trace.
 */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** version 00: `00-<trace-id 32 hex>-<parent-id 16 hex>-<flags 2 hex>`, neither id all zeros (W3C §3.2.2). */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
/** W3C §3.3: list members of `key=value`, at most 32, 512 characters in all is what propagators keep. */
const TRACESTATE =
  /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]*=[\x20-\x2b\x2d-\x3c\x3e-\x7e]*(,[\x20-\x2b\x2d-\x3c\x3e-\x7e]*=[\x20-\x2b\x2d-\x3c\x3e-\x7e]*){0,31}$/;
const MAX_TRACESTATE = 512;

/** The parts of a well-formed traceparent, else undefined. */
export function parseTraceparent(value: unknown): { traceId: string; parentId: string; flags: string } | undefined {
  if (typeof value !== "string") return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return { traceId: match[1]!, parentId: match[2]!, flags: match[3]! };
}

/** A trace context from loose values (a header, metadata): undefined unless the traceparent is well formed. */
export function traceContextOf(traceparent: unknown, tracestate: unknown): TraceContext | undefined {
  if (!parseTraceparent(traceparent)) return undefined;
  const state =
    typeof tracestate === "string" && tracestate.length <= MAX_TRACESTATE && TRACESTATE.test(tracestate.trim())
      ? tracestate.trim()
      : undefined;
  return { traceparent: (traceparent as string).trim(), ...(state ? { tracestate: state } : {}) };
}

/** The trace context a received message carries in `metadata.openwop`, if well formed. */
export function messageTraceContext(message: Pick<Message, "metadata"> | undefined): TraceContext | undefined {
  const openwop = message?.metadata?.["openwop"];
  if (typeof openwop !== "object" || openwop === null || Array.isArray(openwop)) return undefined;
  const { traceparent, tracestate } = openwop as Record<string, unknown>;
  return traceContextOf(traceparent, tracestate);
}

/** A copy of `message` carrying `trace` in `metadata.openwop` (other metadata, and other `openwop` members, kept). */
export function withTraceContext(message: Message, trace: TraceContext): Message {
  const metadata = message.metadata ?? {};
  const current = metadata["openwop"];
  const openwop = typeof current === "object" && current !== null && !Array.isArray(current) ? current : {};
  const { traceparent: _p, tracestate: _s, ...rest } = openwop as Record<string, unknown>;
  return {
    ...message,
    metadata: {
      ...metadata,
      openwop: {
        ...rest,
        traceparent: trace.traceparent,
        ...(trace.tracestate !== undefined ? { tracestate: trace.tracestate } : {}),
      },
    },
  };
}
