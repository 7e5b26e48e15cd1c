import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Health } from "../../gen/grpc/health/v1/health_pb.js";
import {
  HealthCheckResponse_ServingStatus as Status,
  HealthCheckResponseSchema,
} from "../../gen/grpc/health/v1/health_pb.js";

export interface HealthServiceOptions {
  /** Readiness of the instance (store reachable, not draining). */
  ready: () => Promise<boolean>;
  /** Service names a caller may ask about; "" (the whole server) is always known. */
  services: string[];
  /** How often Watch re-checks readiness to report changes. */
  watchIntervalMs: number;
}

/**
 * `grpc.health.v1.Health`: SERVING when the instance is ready (the same check as /readyz), NOT_SERVING
 * otherwise. Every served service shares the one status: they share the store and the process.
 */
export function createHealthService(options: HealthServiceOptions): ServiceImpl<typeof Health> {
  const known = new Set(["", ...options.services]);
  const status = async (): Promise<Status> => ((await options.ready()) ? Status.SERVING : Status.NOT_SERVING);
  return {
    async check(req) {
      if (!known.has(req.service)) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      return create(HealthCheckResponseSchema, { status: await status() });
    },
    async *watch(req, ctx) {
      if (!known.has(req.service)) {
        // The protocol: Watch answers SERVICE_UNKNOWN (and keeps the stream open) for a service it does not know.
        yield create(HealthCheckResponseSchema, { status: Status.SERVICE_UNKNOWN });
        await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
        return;
      }
      let last: Status | undefined;
      while (!ctx.signal.aborted) {
        const now = await status();
        if (now !== last) yield create(HealthCheckResponseSchema, { status: (last = now) });
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, options.watchIntervalMs);
          ctx.signal.addEventListener(
            "abort",
            () => {
              clearTimeout(timer);
              resolve();
            },
            { once: true },
          );
        });
      }
    },
  };
}
