import { A2AService, AgentCardSchema } from "../../gen/lf/a2a/v1/a2a_pb.js";
import type { A2AVersionModule } from "../version-module.js";
import { v10ConnectService } from "./v10-connect-service.js";
import { v10ErrorShapes } from "./v10-errors.js";
import { writeV10 } from "./v10-json.js";
import { v10JsonRpcMethods } from "./v10-jsonrpc-methods.js";
import { v10Operations } from "./v10-operations.js";
import { encodeAgentCard } from "./v10-card-codec.js";
import { v10PeerClient } from "./v10-peer-client-codec.js";
import { v10PushBody } from "./v10-push-body.js";
import { v10RestRoutes } from "./v10-rest-routes.js";

/** A2A 1.0 (`lf.a2a.v1`): everything the bindings need, read through the registry. */
export const v10: A2AVersionModule = {
  version: "1.0",
  bind(deps) {
    const ops = v10Operations(deps);
    return {
      jsonRpc: v10JsonRpcMethods(ops),
      rest: v10RestRoutes(ops),
      connect: (router) => router.service(A2AService, v10ConnectService(ops)),
    };
  },
  // The gRPC rpc names (PascalCase), which JSON-RPC 1.0 uses as its method names.
  jsonRpcMethodNames: A2AService.methods.map((m) => m.name),
  connectService: A2AService,
  restMediaType: "application/a2a+json",
  errors: v10ErrorShapes,
  push: v10PushBody,
  peer: v10PeerClient,
  // The pure 1.0 card (ProtoJSON of `lf.a2a.v1.AgentCard`).
  card: { profile: "a2a-1.0", document: (card) => writeV10(AgentCardSchema, encodeAgentCard(card)), signed: true },
};
