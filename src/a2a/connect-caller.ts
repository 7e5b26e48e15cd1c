import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { CallContext } from "../auth/call-context.js";
import type { Principal } from "../auth/principal.js";

/**
 * The caller of a Connect/gRPC/gRPC-Web call, set by the transport's authentication interceptor before any
 * service method runs; the services read it here instead of authenticating again.
 */
export const CALLER = createContextKey<Principal | undefined>(undefined, { description: "the authenticated caller" });

/** The handler context as the operations' CallContext; its signal fires on cancel, deadline and shutdown; `deadline` is the caller's. */
export function callContextOf(ctx: HandlerContext): CallContext {
  const principal = ctx.values.get(CALLER);
  if (!principal) throw new Error("no authenticated caller: the authentication interceptor did not run");
  const timeoutMs = ctx.timeoutMs();
  return { principal, signal: ctx.signal, ...(timeoutMs !== undefined ? { deadline: Date.now() + timeoutMs } : {}) };
}
