import type { Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { A2A_VERSION_HEADER, negotiateA2AVersion } from "../../a2a/protocol-version.js";
import { v10Operations, type V10OperationsOptions } from "../../a2a/v10/v10-operations.js";
import { A2AService as V03Service } from "../../gen/a2a/v1/a2a_pb.js";
import { A2AService as V10Service } from "../../gen/lf/a2a/v1/a2a_pb.js";
import type { HttpRequest, HttpResponse } from "../http-io.js";
import { connectErrorV10 } from "../a2a-v10-errors.js";
import { createV03ConnectService, type V03ConnectServiceOptions } from "./a2a-v03-connect-service.js";
import { createV10ConnectService } from "./a2a-v10-connect-service.js";
import { toConnectError } from "./connect-errors.js";

/** Connect, gRPC and gRPC-Web paths of the two services: `/a2a.v1.A2AService/*` (0.3), `/lf.a2a.v1.A2AService/*` (1.0). */
export const A2A_RPC_PREFIXES = [`/${V03Service.typeName}/`, `/${V10Service.typeName}/`] as const;

export interface A2AConnectHandlerOptions extends V03ConnectServiceOptions, Pick<V10OperationsOptions, "durableTasks"> {
  /** Per-message limit (the same as the HTTP body limit); larger messages answer RESOURCE_EXHAUSTED. */
  maxBodyBytes: number;
  /** Aborts every handler's signal, so open streams end when the app shuts down. */
  shutdownSignal: AbortSignal;
}

/**
 * One Node handler for both A2A gRPC services on the shared port, over gRPC (h2c), Connect and gRPC-Web:
 * the service name routes each call to its version (wire facts §5.7). Before any handler runs, the
 * `a2a-version` metadata is checked: absent or empty (0.3) and "0.3"/"1.0" pass, anything else answers
 * FAILED_PRECONDITION (VersionNotSupported; with an ErrorInfo detail on the 1.0 service). Unknown fields
 * and enum names in Connect JSON are refused (INVALID_ARGUMENT).
 */
export function createA2AConnectHandler(options: A2AConnectHandlerOptions): (req: HttpRequest, res: HttpResponse) => void {
  const { logger } = options;
  const versionCheck: Interceptor = (next) => async (req) => {
    try {
      negotiateA2AVersion(req.header.get(A2A_VERSION_HEADER));
    } catch (err) {
      throw req.service.typeName === V10Service.typeName ? connectErrorV10(err, logger, req.method.name) : toConnectError(err, logger, req.method.name);
    }
    return next(req);
  };
  const operations = v10Operations({ service: options.service, durableTasks: options.durableTasks });
  return connectNodeAdapter({
    routes: (router) => {
      router.service(V03Service, createV03ConnectService(options));
      router.service(V10Service, createV10ConnectService({ operations, authenticator: options.authenticator, logger }));
    },
    interceptors: [versionCheck],
    grpc: true,
    grpcWeb: true,
    connect: true,
    readMaxBytes: options.maxBodyBytes,
    shutdownSignal: options.shutdownSignal,
    jsonOptions: { ignoreUnknownFields: false },
  });
}

export function isA2ARpcPath(url: string | undefined): boolean {
  const path = url ?? "";
  return A2A_RPC_PREFIXES.some((prefix) => path.startsWith(prefix));
}
