import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { CallContext } from "../auth/call-context.js";
import type { Principal } from "../auth/principal.js";

/**
 * The caller of a Connect/gRPC/gRPC-Web call, set by the transport's authentication interceptor before any
 * service method runs; the services read it here instead of authenticating again.
 */
export const CALLER = createContextKey<Principal | undefined>(undefined, { description: "the authenticated caller" });

/** The request metadata key that resumes a subscription where it left off (the SSE bindings' `Last-Event-ID`). */
export const RESUME_METADATA_KEY = "a2a-last-event-id";

/**
 * The handler context as the operations' CallContext; its signal fires on cancel, deadline and shutdown;
 * `deadline` is the caller's; `resumeFrom` the `a2a-last-event-id` metadata.
 */
export function callContextOf(ctx: HandlerContext): CallContext {
  const principal = ctx.values.get(CALLER);
  if (!principal) throw new Error("no authenticated caller: the authentication interceptor did not run");
  const timeoutMs = ctx.timeoutMs();
  const resumeFrom = ctx.requestHeader.get(RESUME_METADATA_KEY);
  return {
    principal,
    signal: ctx.signal,
    ...(timeoutMs !== undefined ? { deadline: Date.now() + timeoutMs } : {}),
    ...(resumeFrom !== null ? { resumeFrom } : {}),
  };
}
