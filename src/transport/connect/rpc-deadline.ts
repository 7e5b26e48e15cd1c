import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Caller deadlines on the RPC bindings: `grpc-timeout` (gRPC, gRPC-Web) and `connect-timeout-ms` (Connect).
 * connect-node arms one timer per call with the caller's value; Node's timers hold at most 2^31-1 ms, and a
 * longer delay fires after 1 ms with a TimeoutOverflowWarning, so a huge deadline (`99999999H`) would expire
 * at once. Deadlines past that limit are clamped to it here, before the framework reads them: such a call
 * then has, in effect, no deadline, and each of its store operations is bounded by STORE_TIMEOUT_MS.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** The clamped values in each header's grammar (`grpc-timeout` allows at most 8 digits). */
const CLAMPED_GRPC_TIMEOUT = `${Math.floor(MAX_TIMER_MS / 1000)}S`;
const CLAMPED_CONNECT_TIMEOUT = String(MAX_TIMER_MS);

const GRPC_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** Rewrites a deadline header past Node's timer limit to that limit; malformed values are left for the framework to refuse. */
export function clampDeadlineHeaders(header: Headers): void {
  const grpc = header.get("grpc-timeout");
  const clamped = clampGrpcTimeout(grpc);
  if (clamped !== grpc) header.set("grpc-timeout", clamped!);
  const connect = header.get("connect-timeout-ms");
  if (connect && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_TIMER_MS)
    header.set("connect-timeout-ms", CLAMPED_CONNECT_TIMEOUT);
}

/** A `grpc-timeout` value past Node's timer limit as that limit; any other value (or none) as it is. */
export function clampGrpcTimeout(value: string | null): string | null {
  const match = value ? /^(\d{1,8})([HMSmun])$/.exec(value) : null;
  return match && Number(match[1]) * GRPC_UNIT_MS[match[2]!]! > MAX_TIMER_MS ? CLAMPED_GRPC_TIMEOUT : value;
}

/**
 * A unary call's answer, or DEADLINE_EXCEEDED as soon as the call's deadline passes (the framework's deadline
 * signal fires then, but only aborts; work that does not watch the signal would still be awaited). Other
 * aborts (the caller cancelled, shutdown) do not cut the call short here.
 */
export function untilDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      const reason: unknown = signal.reason;
      if (reason instanceof ConnectError && reason.code === Code.DeadlineExceeded) reject(reason);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
