import type { DescService } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ReflectionV1 } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import type { HttpRequest, HttpResponse } from "../http-io.js";
import { createHealthService } from "./grpc-health.js";
import { createReflectionServices } from "./grpc-reflection.js";
import { answerUnknownMethod } from "./rpc-unknown-method.js";

/** The operator's gRPC services (health, reflection v1 and v1alpha). */
export const OPS_SERVICES: DescService[] = [Health, ReflectionV1, ReflectionV1alpha];
const OPS_PREFIXES = OPS_SERVICES.map((s) => `/${s.typeName}/`);

export interface OpsConnectOptions {
  /** The application's gRPC services (both A2A versions), listed by reflection and known to health. */
  services: DescService[];
  ready: () => Promise<boolean>;
  shutdownSignal: AbortSignal;
  watchIntervalMs?: number;
}

/**
 * The operator's gRPC services on the shared port, without credentials (like /healthz): health checking
 * (`grpc.health.v1.Health`) and server reflection (`grpc.reflection.v1` and `v1alpha`), so grpcurl,
 * `buf curl` and grpc-health-probe work without our .proto files.
 */
export function createOpsConnectHandler(options: OpsConnectOptions): (req: HttpRequest, res: HttpResponse) => void {
  const listed = [...options.services, ...OPS_SERVICES];
  const reflection = createReflectionServices(listed);
  const health = createHealthService({
    ready: options.ready,
    services: listed.map((s) => s.typeName),
    watchIntervalMs: options.watchIntervalMs ?? 5_000,
  });
  return connectNodeAdapter({
    routes: (router) => {
      router.service(Health, health);
      router.service(ReflectionV1, reflection.v1);
      router.service(ReflectionV1alpha, reflection.v1alpha);
    },
    grpc: true,
    grpcWeb: true,
    connect: true,
    shutdownSignal: options.shutdownSignal,
    // An unknown method of these services: UNIMPLEMENTED in the caller's protocol, not a bare 404.
    fallback: (req, res) => answerUnknownMethod(req, res as unknown as HttpResponse),
  });
}

export function isOpsRpcPath(url: string | undefined): boolean {
  const path = url ?? "";
  return OPS_PREFIXES.some((prefix) => path.startsWith(prefix));
}
