import type { Principal } from "./principal.js";

/** Who is calling, and when to stop: what every operation of every surface receives from its binding. */
export interface CallContext {
  principal: Principal;
  /** Abort when the caller goes away (streams stop, nothing else is undone). */
  signal?: AbortSignal;
  /**
   * The caller's deadline (epoch ms), when its binding carries one (gRPC `grpc-timeout`, Connect
   * `connect-timeout-ms`); store operations give up at it (and at STORE_TIMEOUT_MS in any case).
   */
  deadline?: number;
  /**
   * Where a re-attaching stream left off: the `Last-Event-ID` header (SSE bindings) or `a2a-last-event-id`
   * metadata (gRPC, Connect, gRPC-Web), as sent; only subscriptions read it (`domain/stream-cursor.ts`).
   */
  resumeFrom?: string;
}
