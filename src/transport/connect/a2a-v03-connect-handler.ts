import { connectNodeAdapter } from "@connectrpc/connect-node";
import { A2AService } from "../../gen/a2a/v1/a2a_pb.js";
import type { HttpRequest, HttpResponse } from "../http-io.js";
import { createV03ConnectService, type V03ConnectServiceOptions } from "./a2a-v03-connect-service.js";

/** Every Connect, gRPC and gRPC-Web call of the v0.3 service has a path under this prefix. */
export const A2A_V03_RPC_PREFIX = `/${A2AService.typeName}/`;

export interface V03ConnectHandlerOptions extends V03ConnectServiceOptions {
  /** Per-message limit (the same as the HTTP body limit); larger messages answer RESOURCE_EXHAUSTED. */
  maxBodyBytes: number;
  /** Aborts every handler's signal, so open streams end when the app shuts down. */
  shutdownSignal: AbortSignal;
}

/**
 * One Node request handler for the three RPC protocols on the shared port: Connect and gRPC-Web over
 * HTTP/1.1 or h2c, gRPC over h2c. Unknown fields and unknown enum names in Connect JSON are refused
 * (INVALID_ARGUMENT) instead of being dropped silently.
 */
export function createV03ConnectHandler(options: V03ConnectHandlerOptions): (req: HttpRequest, res: HttpResponse) => void {
  return connectNodeAdapter({
    routes: (router) => router.service(A2AService, createV03ConnectService(options)),
    grpc: true,
    grpcWeb: true,
    connect: true,
    readMaxBytes: options.maxBodyBytes,
    shutdownSignal: options.shutdownSignal,
    jsonOptions: { ignoreUnknownFields: false },
  });
}

export function isV03RpcPath(url: string | undefined): boolean {
  return (url ?? "").startsWith(A2A_V03_RPC_PREFIX);
}
